#include "util/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace berth::files {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/berth-files-test.XXXXXX";
  return mkdtemp(tmpl);
}

TEST(Files, AtomicWriteThenReadRoundTrips) {
  std::string d = temp_dir();
  std::string p = d + "/x";
  ASSERT_TRUE(write_file_atomic(p, "hello").ok());
  ASSERT_TRUE(write_file_atomic(p, "bye").ok());
  auto r = read_file(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "bye");
  unlink(p.c_str());
  rmdir(d.c_str());
}

// The names in `dir`, hidden ones too, sorted.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Files, AtomicWriteLeavesOnlyTheFileWithItsMode) {
  std::string d = temp_dir();
  for (bool sync : {true, false}) {
    ASSERT_TRUE(write_file_atomic(d + "/r", sync ? "synced" : "not synced", sync, 0600).ok());
    EXPECT_EQ(listing(d), std::vector<std::string>{"r"});
    struct stat st {};
    ASSERT_EQ(::stat((d + "/r").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(read_file(d + "/r").value(), sync ? "synced" : "not synced");
  }
  std::filesystem::remove_all(d);
}

TEST(Files, AtomicWriteFailureNamesThePathAndLeavesNothing) {
  std::string d = temp_dir();
  ASSERT_EQ(::mkdir((d + "/sub").c_str(), 0755), 0);
  // rename() cannot replace a directory with a file.
  auto r = write_file_atomic(d + "/sub", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kIo);
  EXPECT_EQ(r.error().message().rfind(d + "/sub: cannot rename onto: ", 0), 0u)
      << r.error().message();
  EXPECT_EQ(listing(d), std::vector<std::string>{"sub"});
  auto missing = write_file_atomic(d + "/no/such/dir/f", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Errc::kNotFound);
  EXPECT_NE(missing.error().message().find(d + "/no/such/dir/.tmp."), std::string::npos)
      << missing.error().message();
  std::filesystem::remove_all(d);
}

TEST(Files, WriteTempReturnsACompleteHiddenFile) {
  std::string d = temp_dir();
  auto a = write_temp(d, "one", 0444, true);
  auto b = write_temp(d, "two", 0444, false);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);  // unique per call
  EXPECT_EQ(a->rfind(d + "/.tmp.", 0), 0u) << *a;
  EXPECT_EQ(read_file(*a).value(), "one");
  EXPECT_EQ(read_file(*b).value(), "two");
  struct stat st {};
  ASSERT_EQ(::stat(a->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  std::filesystem::remove_all(d);
}

TEST(Files, ParentDirTable) {
  const std::pair<const char*, const char*> cases[] = {
      {"a/b/c", "a/b"}, {"c", "."}, {"/c", "/"}, {"/a/b", "/a"}, {"./x", "."},
  };
  for (const auto& [path, want] : cases) EXPECT_EQ(parent_dir(path), want) << path;
}

TEST(Files, ReadRefusesFileOverLimit) {
  std::string d = temp_dir();
  std::string p = d + "/big";
  ASSERT_TRUE(write_file_atomic(p, std::string(100, 'a')).ok());
  auto r = read_file(p, 99);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  unlink(p.c_str());
  rmdir(d.c_str());
}

TEST(Files, ReadTakesEveryByteUpToTheLimitExactly) {
  std::string d = temp_dir();
  std::string p = d + "/f";
  // Sizes around the first read and the growth steps; every byte distinct by position.
  for (size_t n : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{200001}}) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7 + i / 256);
    ASSERT_TRUE(write_file_atomic(p, bytes).ok());
    auto all = read_file(p);
    ASSERT_TRUE(all.ok()) << n;
    EXPECT_EQ(*all, bytes) << n;
    auto exact = read_file(p, n);
    ASSERT_TRUE(exact.ok()) << n;
    EXPECT_EQ(exact->size(), n);
    if (n > 0) {
      EXPECT_FALSE(read_file(p, n - 1).ok()) << n;
    }
  }
  // A file that is not regular has no size to go by: read to its end all the same.
  auto proc = read_file("/proc/self/status");
  ASSERT_TRUE(proc.ok());
  EXPECT_NE(proc->find("Name:"), std::string::npos);
  unlink(p.c_str());
  rmdir(d.c_str());
}

TEST(Files, ReadOfDirectoryIsAnError) {
  auto r = read_file("/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is a directory"), std::string::npos);
}

// A mapped file is its bytes, still there after the file is replaced and removed (a
// rename leaves the mapped inode alone); a file of another length, a missing one and
// a directory are refused, naming the path.
TEST(Files, MappedFileIsItsBytesWhileHeld) {
  std::string d = temp_dir();
  std::string p = d + "/steps";
  std::string bytes(3 * 4096 + 17, 'x');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(write_file_atomic(p, bytes, false).ok());
  auto m = map_file(p, bytes.size());
  ASSERT_TRUE(m.ok()) << m.error().message();
  SharedBytes held = *m;
  m = Result<SharedBytes>(fail(Errc::kInternal, "dropped"));
  ASSERT_TRUE(write_file_atomic(p, std::string(bytes.size(), 'z'), false).ok());
  ::unlink(p.c_str());
  EXPECT_EQ(*held, bytes);

  ASSERT_TRUE(write_file_atomic(p, bytes, false).ok());
  auto shorter = map_file(p, bytes.size() + 1);
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.error().code(), Errc::kInvalidInput);
  EXPECT_NE(shorter.error().message().find(p), std::string::npos);
  EXPECT_EQ(map_file(d + "/none", 1).error().code(), Errc::kNotFound);
  EXPECT_FALSE(map_file(d, 4096).ok());
  ASSERT_TRUE(write_file_atomic(p, "", false).ok());
  auto empty = map_file(p, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(**empty, "");
  ::unlink(p.c_str());
  ::rmdir(d.c_str());
}

TEST(Files, SharedStringIsItsBytes) {
  SharedBytes b = share_string(std::string(100, 'q'));
  SharedBytes c = b;
  b.reset();
  EXPECT_EQ(*c, std::string(100, 'q'));
}

TEST(Files, ReadOfMissingFileIsNotFoundAndNamesPath) {
  auto r = read_file("/nonexistent/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find("/nonexistent/x"), std::string::npos);
}

}  // namespace
}  // namespace berth::files
