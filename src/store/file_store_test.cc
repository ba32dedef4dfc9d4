// FileStore specifics: the layout, publish atomicity, N processes, verification of
// real files on disk, hard-link materialisation.
#include "store/file_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "store/testing.h"
#include "util/files.h"

namespace berth::store {
namespace {

std::unique_ptr<FileStore> open_or_die(const std::string& dir, FileStore::Options o = {}) {
  auto s = FileStore::open(dir, o);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? std::move(*s) : nullptr;
}

// Overwrites a stored (read-only) copy in place, as a failing disk might.
void scribble(const std::string& path, const std::string& bytes) {
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

TEST(FileStore, LaysOutObjectsByHashAndRowsByAddress) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  auto name = s->put_object("abc");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(s->object_path(*name),
            d / "s/objects/ba/7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  struct stat st {};
  ASSERT_EQ(::stat(s->object_path(*name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);  // stored copies are read-only
  ASSERT_TRUE(s->put_row("rows/v1/steps/k", "row").ok());
  EXPECT_EQ(*files::read_file(d / "s/rows/v1/steps/k"), "row");
  EXPECT_EQ(*files::read_file(d / "s/FORMAT"), "berth-store 1\n");
  EXPECT_EQ(s->describe(), "file://" + d / "s");
}

// Files are copied and hashed inline up to a threshold and through a hasher thread
// after it: every size around the switch-over must give the bytes' own name and a
// verified copy of the same bytes, whichever path it took.
TEST(FileStore, StreamsFilesOfEverySizeAroundTheInlineThreshold) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  for (size_t size : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{262143},
                      size_t{262144}, size_t{262145}, size_t{(3u << 20) + 17}}) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + size) % 251);
    std::string src = d / ("src." + std::to_string(size));
    ASSERT_TRUE(files::write_file_atomic(src, bytes).ok());
    auto name = s->put_object_file(src);
    ASSERT_TRUE(name.ok()) << name.error().message();
    EXPECT_EQ(*name, object_name_of(bytes)) << size;
    std::string dest = d / ("copy." + std::to_string(size));
    auto got = s->get_object_to_file(*name, dest);
    ASSERT_TRUE(got.ok() && got->present()) << size;
    EXPECT_EQ(*files::read_file(dest, 1u << 30), bytes) << size;
    auto mem = s->get_object(*name);
    ASSERT_TRUE(mem.ok() && mem->present()) << size;
    EXPECT_EQ(mem->bytes, bytes) << size;
    std::string linked = d / ("linked." + std::to_string(size));
    auto m = s->materialize(*name, linked);
    ASSERT_TRUE(m.ok() && m->present()) << size;
  }
}

// An adopted file becomes the stored copy itself: same inode, read-only, named by its
// bytes, and the file stays where it was for its owner to remove.
TEST(FileStore, AdoptsAFileByLinkingItIn) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::string out = d / "out";
  ASSERT_TRUE(files::write_file_atomic(out, "adopted\n").ok());
  auto name = s->adopt_object_file(out);
  ASSERT_TRUE(name.ok()) << name.error().message();
  EXPECT_EQ(*name, object_name_of("adopted\n"));
  struct stat a {}, b {};
  ASSERT_EQ(::stat(out.c_str(), &a), 0);
  ASSERT_EQ(::stat(s->object_path(*name).c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(b.st_mode & 0777, 0444u);
  auto got = s->get_object(*name);
  ASSERT_TRUE(got.ok() && got->present());
  EXPECT_EQ(got->bytes, "adopted\n");
  // Adopting the same bytes again finds the object there and changes nothing.
  std::string again = d / "again";
  ASSERT_TRUE(files::write_file_atomic(again, "adopted\n").ok());
  ASSERT_EQ(*s->adopt_object_file(again), *name);
  ASSERT_EQ(::stat(s->object_path(*name).c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
}

// A file someone else can still reach — a second hard link (a step that linked its
// input, the user's file, to its output) or a symlink — is copied, never linked in: an
// edit of the user's file must not change a stored object.
TEST(FileStore, CopiesAnAdoptedFileThatHasOtherNames) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::string user = d / "user.txt";
  ASSERT_TRUE(files::write_file_atomic(user, "mine\n").ok());
  ASSERT_EQ(::chmod(user.c_str(), 0644), 0);
  std::string linked = d / "linked";
  ASSERT_EQ(::link(user.c_str(), linked.c_str()), 0);
  auto name = s->adopt_object_file(linked);
  ASSERT_TRUE(name.ok());
  struct stat u {}, o {};
  ASSERT_EQ(::stat(user.c_str(), &u), 0);
  ASSERT_EQ(::stat(s->object_path(*name).c_str(), &o), 0);
  EXPECT_NE(u.st_ino, o.st_ino);
  EXPECT_EQ(u.st_mode & 0777, 0644u);  // the user's file is left as it was
  std::string sym = d / "sym";
  ASSERT_TRUE(files::write_file_atomic(d / "target", "via symlink\n").ok());
  ASSERT_EQ(::symlink((d / "target").c_str(), sym.c_str()), 0);
  auto sname = s->adopt_object_file(sym);
  ASSERT_TRUE(sname.ok());
  EXPECT_EQ(*sname, object_name_of("via symlink\n"));
  struct stat l {};
  ASSERT_EQ(::lstat(s->object_path(*sname).c_str(), &l), 0);
  EXPECT_TRUE(S_ISREG(l.st_mode));
  // Without hard links (the fallback's tests), adopting is a copy.
  auto nolinks = open_or_die(d / "n", FileStore::Options{.fsync_objects = true, .use_hard_links = false});
  std::string f = d / "f";
  ASSERT_TRUE(files::write_file_atomic(f, "copy me\n").ok());
  auto nname = nolinks->adopt_object_file(f);
  ASSERT_TRUE(nname.ok());
  struct stat fs1 {}, fs2 {};
  ASSERT_EQ(::stat(f.c_str(), &fs1), 0);
  ASSERT_EQ(::stat(nolinks->object_path(*nname).c_str(), &fs2), 0);
  EXPECT_NE(fs1.st_ino, fs2.st_ino);
}

// The barrier's promise: a wait() returns only after a syncfs that started after it
// was called. Two waits one after the other are two flushes; waiters that overlap
// share them.
TEST(SyncBarrier, EveryWaitIsCoveredByAFlushThatStartedAfterIt) {
  testing::TempDir d;
  auto b = posix::SyncBarrier::open(d.path());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->wait().ok());
  ASSERT_TRUE((*b)->wait().ok());
  EXPECT_EQ((*b)->syncs(), 2u);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) ok += (*b)->wait().ok();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 80);
  EXPECT_GE((*b)->syncs(), 2u + 10u);  // each thread's 10 waits are 10 flushes at least
  EXPECT_LE((*b)->syncs(), 2u + 80u);
  EXPECT_FALSE(posix::SyncBarrier::open(d / "missing").ok());
}

TEST(FileStore, AskingAboutManyObjectsHoldsNoDescriptorPerShard) {
  // Objects in every one of the 256 shards, asked about at once: were a descriptor held
  // per shard, the table would grow past the 256 a process started from a shell often
  // inherits.
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) names.push_back(*s->put_object("o" + std::to_string(i)));
  names.push_back(object_name_of("absent"));
  int before = testing::fd_table_size();
  ASSERT_GT(before, 0);
  std::vector<char> present(names.size(), 7);
  s->has_objects(names, present);
  EXPECT_EQ(std::count(present.begin(), present.end(), 1), 3000);
  EXPECT_EQ(present.back(), 0);
  EXPECT_LE(testing::fd_table_size(), std::max(before, 64)) << before;
}

TEST(FileStore, RefusesADirectoryThatIsNotAStore) {
  testing::TempDir d;
  ASSERT_TRUE(files::write_file_atomic(d / "thesis.tex", "x").ok());
  auto s = FileStore::open(d.path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kRefused);
  EXPECT_NE(s.error().message().find("thesis.tex"), std::string::npos);
}

TEST(FileStore, RefusesAnotherFormatVersion) {
  testing::TempDir d;
  ASSERT_TRUE(files::write_file_atomic(d / "FORMAT", "berth-store 2\n").ok());
  auto s = FileStore::open(d.path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kRefused);
  EXPECT_NE(s.error().message().find("berth-store 2"), std::string::npos);
}

TEST(FileStore, ReopensAnExistingStore) {
  testing::TempDir d;
  std::string name = *open_or_die(d / "s")->put_object("kept");
  auto again = open_or_die(d / "s");
  EXPECT_EQ(again->get_object(name)->bytes, "kept");
}

TEST(FileStore, CorruptObjectIsReportedAbsentAndCanBeReplaced) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::string name = *s->put_object("the real bytes");
  scribble(s->object_path(name), "the real bytez");  // same length, one byte off

  auto r = s->get_object(name);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kCorrupt);
  EXPECT_FALSE(r->present());
  EXPECT_TRUE(r->bytes.empty());
  EXPECT_NE(r->problem.find(name), std::string::npos) << r->problem;
  EXPECT_NE(r->problem.find(object_name_of("the real bytez")), std::string::npos);
  // Moved aside, so it is now absent and a recomputed put publishes a good copy.
  EXPECT_FALSE(*s->has_object(name));
  EXPECT_FALSE(std::filesystem::is_empty(d / "s/corrupt"));
  ASSERT_TRUE(s->put_object("the real bytes").ok());
  EXPECT_EQ(s->get_object(name)->bytes, "the real bytes");
}

TEST(FileStore, CorruptionIsCaughtByFileReadsAndMaterialize) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::string name = *s->put_object("payload");
  scribble(s->object_path(name), "truncated");
  auto r = s->get_object_to_file(name, d / "out");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kCorrupt);
  EXPECT_FALSE(files::exists(d / "out"));

  ASSERT_TRUE(s->put_object("payload").ok());
  scribble(s->object_path(name), "");
  auto m = s->materialize(name, d / "out");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->found, Found::kCorrupt);
  EXPECT_FALSE(files::exists(d / "out"));
}

TEST(FileStore, MaterializeHardLinksOnTheSameFilesystem) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::string name = *s->put_object("linked");
  auto r = s->materialize(name, d / "result");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->present());
  EXPECT_TRUE(r->linked);
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat(s->object_path(name).c_str(), &a), 0);
  ASSERT_EQ(::stat((d / "result").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_nlink, 2u);  // the store's copy and the result; no temporary left
}

TEST(FileStore, MaterializeCopiesAcrossFilesystems) {
  testing::TempDir d;
  testing::TempDir other("/dev/shm");
  struct stat a {
  }, b{};
  if (other.path().empty() || ::stat(d.path().c_str(), &a) != 0 ||
      ::stat(other.path().c_str(), &b) != 0 || a.st_dev == b.st_dev) {
    GTEST_SKIP() << "needs /dev/shm on a filesystem other than /tmp";
  }
  auto s = open_or_die(d / "s");
  std::string name = *s->put_object("copied");
  auto r = s->materialize(name, other / "result");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->present());
  EXPECT_FALSE(r->linked);
  EXPECT_EQ(*files::read_file(other / "result"), "copied");
}

TEST(FileStore, MaterializeIntoAMissingDirectoryNamesIt) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  std::string name = *s->put_object("x");
  auto r = s->materialize(name, d / "no/such/dir/result");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no/such/dir"), std::string::npos);
}

TEST(FileStore, AReaderPollingNeverSeesAPartialObject) {
  testing::TempDir d;
  auto s = open_or_die(d / "s", FileStore::Options{.fsync_objects = false});
  constexpr int kObjects = 24;
  std::vector<std::string> contents, paths;
  for (int i = 0; i < kObjects; ++i) {
    contents.push_back(std::string(512 * 1024, static_cast<char>('a' + i % 26)) +
                       std::to_string(i));
    paths.push_back(s->object_path(object_name_of(contents.back())));
  }
  std::atomic<bool> done{false};
  std::atomic<int> partial{0}, complete{0};
  std::thread reader([&] {
    std::vector<bool> seen(kObjects, false);
    while (!done.load()) {
      for (int i = 0; i < kObjects; ++i) {
        if (seen[i]) continue;
        auto r = files::read_file(paths[i]);
        if (!r.ok()) continue;  // not published yet
        seen[i] = true;
        (*r == contents[i] ? complete : partial)++;
      }
    }
  });
  for (const auto& c : contents) ASSERT_TRUE(s->put_object(c).ok());
  done = true;
  reader.join();
  EXPECT_EQ(partial.load(), 0);
  // Whatever the reader saw was whole; every temporary file is gone.
  for (const auto& e : std::filesystem::recursive_directory_iterator(d / "s/objects")) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp", 0), 0u) << e.path();
  }
}

// Forks `n` processes that each open the store in `dir` (possibly creating it) and
// put one row at `address` at the same moment. Returns how many exited "created".
int race_processes(const std::string& dir, const std::string& address, bool use_links, int n) {
  int gate[2];
  if (::pipe(gate) != 0) return -1;
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) < 0) {
      }  // EOF: every writer starts together
      auto s = FileStore::open(dir, FileStore::Options{.use_hard_links = use_links});
      if (!s.ok()) ::_exit(10);
      std::string mine = "writer " + std::to_string(i);
      auto r = (*s)->put_row(address, mine);
      if (!r.ok()) ::_exit(11);
      if (r->created) ::_exit(0);
      // A loser must be handed a complete row that some writer wrote.
      ::_exit(r->existing.rfind("writer ", 0) == 0 ? 1 : 12);
    }
    kids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  int created = 0;
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
    EXPECT_TRUE(code == 0 || code == 1) << "writer exited " << code;
    if (code == 0) ++created;
  }
  return created;
}

TEST(FileStore, FourProcessesPuttingOneRowCreateItExactlyOnce) {
  testing::TempDir d;
  for (int round = 0; round < 4; ++round) {
    // Round 0 also races the creation of the store itself (its FORMAT file).
    std::string addr = "rows/v1/steps/k" + std::to_string(round);
    EXPECT_EQ(race_processes(d / "s", addr, true, 4), 1) << addr;
  }
}

TEST(FileStore, FourProcessesWithoutHardLinksCreateItExactlyOnce) {
  testing::TempDir d;
  for (int round = 0; round < 4; ++round) {
    std::string addr = "rows/v1/leases/k/" + std::to_string(round);
    EXPECT_EQ(race_processes(d / "s", addr, false, 4), 1) << addr;
  }
}

TEST(FileStore, AnAddressThatIsAPrefixOfRowsIsAnError) {
  testing::TempDir d;
  auto s = open_or_die(d / "s");
  ASSERT_TRUE(s->put_row("rows/v1/leases/k/0", "x").ok());
  auto r = s->get_row("rows/v1/leases/k");
  EXPECT_FALSE(r.ok());
  auto under_row = s->get_row("rows/v1/leases/k/0/deeper");
  ASSERT_TRUE(under_row.ok());
  EXPECT_FALSE(under_row->has_value());
}

}  // namespace
}  // namespace berth::store
