// Trees (spec 05 §1.1): the manifest codec, and directories stored and materialised
// on a FileStore and a MemoryStore.
#include "store/tree.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "store/file_store.h"
#include "store/memory_store.h"
#include "store/testing.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::store {
namespace {

using Kind = TreeEntry::Kind;

const std::string kObjA = object_name_of("a");
const std::string kObjB = object_name_of("b");

void write(const std::string& path, const std::string& bytes, unsigned mode = 0644) {
  ASSERT_TRUE(files::write_file_atomic(path, bytes, false, mode).ok()) << path;
}

void make_dir(const std::string& path) { ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path; }

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The names in `dir`, sorted, without "." and "..".
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// ---- The manifest ----

TEST(Tree, EncodeSortsBytewiseAndDecodesBack) {
  // A space in a path is the name's own; '-' sorts before '/', between "sub" and "sub/b".
  std::vector<TreeEntry> entries = {
      {Kind::kFile, "sub/b", kObjB}, {Kind::kDir, "empty", ""},     {Kind::kExec, "run.sh", kObjA},
      {Kind::kFile, "a b", kObjA},   {Kind::kFile, "sub-x", kObjA},
  };
  std::string m = encode_tree(entries);
  std::string want = "berth-tree 1\n";
  want += "file " + kObjA + " a b\n";
  want += "dir empty\n";
  want += "exec " + kObjA + " run.sh\n";
  want += "file " + kObjA + " sub-x\n";
  want += "file " + kObjB + " sub/b\n";
  EXPECT_EQ(m, want);
  auto back = decode_tree(m);
  ASSERT_TRUE(back.ok()) << back.error().message();
  std::vector<TreeEntry> sorted = {entries[3], entries[1], entries[2], entries[4], entries[0]};
  EXPECT_EQ(*back, sorted);
  EXPECT_EQ(encode_tree(*back), m);
  EXPECT_EQ(tree_objects(*back), (std::vector<std::string>{kObjA, kObjA, kObjA, kObjB}));
}

TEST(Tree, EmptyTreeIsTheHeaderAlone) {
  EXPECT_EQ(encode_tree({}), "berth-tree 1\n");
  auto back = decode_tree("berth-tree 1\n");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->empty());
}

TEST(Tree, DecodeRefusesAnythingEncodeWouldNotWriteNamingTheLine) {
  const std::string h = "berth-tree 1\n";
  const std::string fa = "file " + kObjA + " ";
  struct Case {
    std::string manifest;
    std::string line;  // "line N"
    std::string says;
  };
  const std::vector<Case> cases = {
      {"", "line 1", "empty"},
      {"berth-tree 2\n", "line 1", "expected \"berth-tree 1\""},
      {"berth-tree 1 \n", "line 1", "expected"},
      {h + "link " + kObjA + " a\n", "line 2", "unknown kind `link`"},
      {h + "file\n", "line 2", "no path"},
      {h + "dir\n", "line 2", "no path"},
      {h + fa + "a/../b\n", "line 2", "`..` component"},
      {h + fa + "./a\n", "line 2", "`.` component"},
      {h + fa + "a//b\n", "line 2", "empty component"},
      {h + fa + "/etc/passwd\n", "line 2", "absolute"},
      {h + "dir a/\n", "line 2", "empty component"},
      {h + "dir \n", "line 2", "empty"},
      {h + fa + "a\tb\n", "line 2", "control character"},
      {h + fa + "a\rb\n", "line 2", "control character"},
      {h + fa + "a\x7f\n", "line 2", "control character"},
      {h + fa + "b\n" + fa + "a\n", "line 3", "out of order"},
      {h + fa + "a\n" + "dir a\n", "line 3", "listed twice"},
      {h + fa + "a\n" + fa + "a-x\n" + fa + "a/b\n", "line 4", "below `a`, which is a file"},
      {h + "dir a\n" + fa + "a/b\n", "line 3", "an empty directory"},
      {h + "file sha256:abc a\n", "line 2", "bad object name"},
      {h + "file " + std::string(kObjA).replace(7, 1, "A") + " a\n", "line 2", "bad object name"},
      {h + "file " + kObjA + "\n", "line 2", "no path"},
      {h + "file  " + kObjA + " a\n", "line 2", "bad object name"},
      {h + fa + "a", "line 2", "newline"},
      {"berth-tree 1", "line 1", "newline"},
  };
  for (const Case& c : cases) {
    auto r = decode_tree(c.manifest);
    ASSERT_FALSE(r.ok()) << str::printable(c.manifest, 400);
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    const std::string& m = r.error().message();
    EXPECT_EQ(m.rfind("tree manifest " + c.line + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(c.says), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

// ---- Directories on a store ----

// Each test runs against both a file:// store and a memory store.
class TreeStore : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "file") {
      auto s = FileStore::open(dir_ / "store");
      ASSERT_TRUE(s.ok()) << s.error().message();
      file_ = s->get();
      store_ = std::move(*s);
    } else {
      memory_ = new MemoryStore();
      store_.reset(memory_);
    }
  }

  // A directory with nested files, an exec file and two empty directories.
  void make_sample(const std::string& root) {
    make_dir(root);
    write(root + "/a.txt", "alpha");
    write(root + "/run.sh", "#!/bin/sh\necho hi\n", 0755);
    make_dir(root + "/empty");
    make_dir(root + "/sub");
    write(root + "/sub/b.txt", "beta");
    make_dir(root + "/sub/deep");
    write(root + "/sub/deep/c", "");
    make_dir(root + "/sub/emptier");
  }

  testing::TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
  FileStore* file_ = nullptr;
  MemoryStore* memory_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Backends, TreeStore, ::testing::Values("file", "memory"));

TEST_P(TreeStore, PutThenMaterializeGivesTheSameTree) {
  make_sample(dir_ / "src");
  auto name = put_tree(*store_, dir_ / "src");
  ASSERT_TRUE(name.ok()) << name.error().message();

  std::vector<TreeEntry> entries;
  auto got = get_tree(*store_, *name, &entries);
  ASSERT_TRUE(got.ok() && got->present());
  const std::vector<TreeEntry> want = {
      {Kind::kFile, "a.txt", object_name_of("alpha")},
      {Kind::kDir, "empty", ""},
      {Kind::kExec, "run.sh", object_name_of("#!/bin/sh\necho hi\n")},
      {Kind::kFile, "sub/b.txt", object_name_of("beta")},
      {Kind::kFile, "sub/deep/c", object_name_of("")},
      {Kind::kDir, "sub/emptier", ""},
  };
  EXPECT_EQ(entries, want);
  EXPECT_EQ(*name, object_name_of(encode_tree(want)));

  std::string out = dir_ / "out";
  auto m = materialize_tree(*store_, *name, out);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_TRUE(m->present());
  EXPECT_EQ(m->problem, "");
  EXPECT_EQ(listing(out), (std::vector<std::string>{"a.txt", "empty", "run.sh", "sub"}));
  EXPECT_EQ(*files::read_file(out + "/a.txt"), "alpha");
  EXPECT_EQ(*files::read_file(out + "/sub/b.txt"), "beta");
  EXPECT_EQ(*files::read_file(out + "/sub/deep/c"), "");
  EXPECT_EQ(*files::read_file(out + "/run.sh"), "#!/bin/sh\necho hi\n");
  EXPECT_EQ(mode_of(out + "/run.sh"), 0555u);
  EXPECT_EQ(::access((out + "/run.sh").c_str(), X_OK), 0);
  EXPECT_NE(::access((out + "/a.txt").c_str(), X_OK), 0);
  EXPECT_TRUE(is_dir(out + "/empty"));
  EXPECT_TRUE(listing(out + "/empty").empty());
  EXPECT_TRUE(is_dir(out + "/sub/emptier"));
  EXPECT_EQ(mode_of(out + "/sub") & 0700, 0700u);
  // Nothing left beside it.
  EXPECT_EQ(listing(dir_.path()).size(), GetParam() == "file" ? 3u : 2u);

  // What was materialised stores as the same tree.
  auto again = put_tree(*store_, out);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, *name);
}

TEST_P(TreeStore, AnExecFileIsACopySoTheStoredCopyStaysReadOnly) {
  if (file_ == nullptr) GTEST_SKIP() << "stored copies are files only in a file store";
  make_dir(dir_ / "src");
  write(dir_ / "src/tool", "#!/bin/sh\n", 0755);
  write(dir_ / "src/data", "data");
  auto name = put_tree(*store_, dir_ / "src");
  ASSERT_TRUE(name.ok());
  auto m = materialize_tree(*store_, *name, dir_ / "out");
  ASSERT_TRUE(m.ok() && m->present());
  std::string stored_tool = file_->object_path(object_name_of("#!/bin/sh\n"));
  EXPECT_EQ(mode_of(stored_tool), 0444u);
  EXPECT_EQ(mode_of(dir_ / "out/tool"), 0555u);
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat(stored_tool.c_str(), &a), 0);
  ASSERT_EQ(::stat((dir_ / "out/tool").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
  // A plain file is a hard link to the stored copy.
  ASSERT_EQ(::stat(file_->object_path(object_name_of("data")).c_str(), &a), 0);
  ASSERT_EQ(::stat((dir_ / "out/data").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
}

TEST_P(TreeStore, SameDirectoryGivesTheSameNameAndAnyChangeAnother) {
  make_sample(dir_ / "one");
  make_sample(dir_ / "two");
  make_sample(dir_ / "three");
  make_sample(dir_ / "four");
  auto one = put_tree(*store_, dir_ / "one");
  auto two = put_tree(*store_, dir_ / "two");
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(*one, *two);
  ASSERT_TRUE(files::write_file_atomic(dir_ / "three/sub/b.txt", "betA").ok());
  auto three = put_tree(*store_, dir_ / "three");
  ASSERT_TRUE(three.ok());
  EXPECT_NE(*three, *one);
  ASSERT_EQ(::chmod((dir_ / "four/a.txt").c_str(), 0755), 0);
  auto four = put_tree(*store_, dir_ / "four");
  ASSERT_TRUE(four.ok());
  EXPECT_NE(*four, *one);
}

TEST_P(TreeStore, RefusesSymlinksAndOtherOddFilesNamingThem) {
  make_dir(dir_ / "src");
  make_dir(dir_ / "src/sub");
  write(dir_ / "src/sub/real", "x");
  write(dir_ / "secret", "outside");
  ASSERT_EQ(::symlink((dir_ / "secret").c_str(), (dir_ / "src/sub/link").c_str()), 0);
  auto r = put_tree(*store_, dir_ / "src");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  EXPECT_EQ(r.error().message(),
            "sub/link is a symlink; a directory output holds files and directories only");
  // The outside file was never stored.
  auto has = store_->has_object(object_name_of("outside"));
  ASSERT_TRUE(has.ok());
  EXPECT_FALSE(*has);

  ASSERT_EQ(::unlink((dir_ / "src/sub/link").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_ / "src/pipe").c_str(), 0644), 0);
  r = put_tree(*store_, dir_ / "src");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("pipe is a fifo"), std::string::npos) << r.error().message();
}

TEST_P(TreeStore, RefusesANameWithAControlCharacter) {
  make_dir(dir_ / "src");
  write(dir_ / "src/bad\nname", "x");
  auto r = put_tree(*store_, dir_ / "src");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  EXPECT_NE(r.error().message().find("bad\\x0aname"), std::string::npos) << r.error().message();
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
}

TEST_P(TreeStore, RefusesAMissingDirectoryOrAFileNamingIt) {
  auto r = put_tree(*store_, dir_ / "nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find(dir_ / "nothing"), std::string::npos);
  write(dir_ / "file", "x");
  r = put_tree(*store_, dir_ / "file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(dir_ / "file"), std::string::npos);
  EXPECT_NE(r.error().message().find("not a directory"), std::string::npos);
}

TEST_P(TreeStore, MaterializeReplacesAFileOrADirectoryWhole) {
  make_dir(dir_ / "src");
  write(dir_ / "src/new", "new");
  auto name = put_tree(*store_, dir_ / "src");
  ASSERT_TRUE(name.ok());

  write(dir_ / "was-file", "old");
  auto m = materialize_tree(*store_, *name, dir_ / "was-file");
  ASSERT_TRUE(m.ok() && m->present()) << (m.ok() ? m->problem : m.error().message());
  EXPECT_EQ(listing(dir_ / "was-file"), std::vector<std::string>{"new"});

  make_dir(dir_ / "was-dir");
  write(dir_ / "was-dir/stale", "old");
  make_dir(dir_ / "was-dir/old-sub");
  write(dir_ / "was-dir/old-sub/x", "old", 0444);
  ASSERT_EQ(::chmod((dir_ / "was-dir/old-sub").c_str(), 0555), 0);  // still removed
  m = materialize_tree(*store_, *name, dir_ / "was-dir/");          // a trailing '/' names it too
  ASSERT_TRUE(m.ok() && m->present()) << (m.ok() ? m->problem : m.error().message());
  EXPECT_EQ(listing(dir_ / "was-dir"), std::vector<std::string>{"new"});
  EXPECT_EQ(*files::read_file(dir_ / "was-dir/new"), "new");

  // No temporary tree or old copy is left beside them.
  for (const std::string& n : listing(dir_.path())) EXPECT_NE(n.rfind(".tmp", 0), 0u) << n;
}

TEST_P(TreeStore, AMissingFileLeavesTheDestinationAsItWas) {
  // A manifest naming an object that was never stored.
  std::string never = object_name_of("never stored");
  auto name = store_->put_object(
      encode_tree({{Kind::kFile, "plots/a.png", never}, {Kind::kFile, "plots/b.png", kObjA}}));
  ASSERT_TRUE(name.ok());
  ASSERT_TRUE(store_->put_object("a").ok());
  make_dir(dir_ / "out");
  write(dir_ / "out/keep", "mine");

  auto m = materialize_tree(*store_, *name, dir_ / "out");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_FALSE(m->present());
  EXPECT_EQ(m->found, Found::kAbsent);
  EXPECT_EQ(m->problem,
            "file " + dir_ / "out/plots/a.png (object " + never + ") is missing from the store");
  EXPECT_EQ(listing(dir_ / "out"), std::vector<std::string>{"keep"});
  EXPECT_EQ(*files::read_file(dir_ / "out/keep"), "mine");
  for (const std::string& n : listing(dir_.path())) EXPECT_NE(n.rfind(".tmp", 0), 0u) << n;
}

TEST_P(TreeStore, ACorruptFileIsReportedAndTheDestinationLeftAsItWas) {
  make_dir(dir_ / "src");
  write(dir_ / "src/a", "aaa");
  write(dir_ / "src/z", "zzz", 0755);
  auto name = put_tree(*store_, dir_ / "src");
  ASSERT_TRUE(name.ok());
  if (memory_ != nullptr) {
    memory_->plant_corrupt_object_for_test(object_name_of("zzz"), "zz!");
  } else {
    std::string p = file_->object_path(object_name_of("zzz"));
    ASSERT_EQ(::chmod(p.c_str(), 0644), 0);
    write(p, "zz!");
  }
  auto m = materialize_tree(*store_, *name, dir_ / "out");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->found, Found::kCorrupt);
  EXPECT_EQ(m->problem.rfind("exec " + dir_ / "out/z (object " + object_name_of("zzz") + "): ", 0),
            0u)
      << m->problem;
  EXPECT_FALSE(files::exists(dir_ / "out"));
}

TEST_P(TreeStore, AnAbsentManifestIsAbsentAndTouchesNothing) {
  std::string never = object_name_of("no tree");
  write(dir_ / "out", "mine");
  auto m = materialize_tree(*store_, never, dir_ / "out");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->found, Found::kAbsent);
  EXPECT_NE(m->problem.find(never), std::string::npos);
  EXPECT_EQ(*files::read_file(dir_ / "out"), "mine");
  std::vector<TreeEntry> entries;
  auto g = get_tree(*store_, never, &entries);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->found, Found::kAbsent);
}

TEST_P(TreeStore, AnObjectThatIsNotAManifestIsCorrupt) {
  auto name = store_->put_object("just some bytes\n");
  ASSERT_TRUE(name.ok());
  std::vector<TreeEntry> entries;
  auto g = get_tree(*store_, *name, &entries);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->found, Found::kCorrupt);
  EXPECT_EQ(g->problem.rfind("tree " + *name + ": tree manifest line 1: ", 0), 0u) << g->problem;
  write(dir_ / "out", "mine");
  auto m = materialize_tree(*store_, *name, dir_ / "out");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->found, Found::kCorrupt);
  EXPECT_EQ(*files::read_file(dir_ / "out"), "mine");
}

// ---- replace_path ----

TEST(Tree, ReplacePathPutsAFileOrDirectoryInPlaceOfAnything) {
  testing::TempDir d;
  // Onto nothing.
  write(d / "f1", "one");
  ASSERT_TRUE(replace_path(d / "f1", d / "to").ok());
  EXPECT_EQ(*files::read_file(d / "to"), "one");
  EXPECT_FALSE(files::exists(d / "f1"));
  // A directory onto a file.
  make_dir(d / "dir1");
  write(d / "dir1/x", "x");
  ASSERT_TRUE(replace_path(d / "dir1", d / "to").ok());
  EXPECT_EQ(listing(d / "to"), std::vector<std::string>{"x"});
  // A directory onto a directory with other contents.
  make_dir(d / "dir2");
  write(d / "dir2/y", "y");
  ASSERT_TRUE(replace_path(d / "dir2", d / "to").ok());
  EXPECT_EQ(listing(d / "to"), std::vector<std::string>{"y"});
  // A file onto a directory.
  write(d / "f2", "two");
  ASSERT_TRUE(replace_path(d / "f2", d / "to").ok());
  EXPECT_EQ(*files::read_file(d / "to"), "two");
  // Every old one removed.
  EXPECT_EQ(listing(d.path()), std::vector<std::string>{"to"});
  // Nothing to move.
  auto r = replace_path(d / "absent", d / "to");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(*files::read_file(d / "to"), "two");
}

}  // namespace
}  // namespace berth::store
