// FileStore specifics: the layout, publish atomicity, N processes, verification of
// real files on disk, hard-link materialisation.
#include "store/file_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
