#include "pipeline/worker.h"
#include "util/fake_clock_for_test.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// ---- Names ----------------------------------------------------------------------------

TEST(WorkerName, IsReducedToCharactersAPathAndARecordCanCarry) {
  struct Case {
    std::string given;
    std::string want;
  };
  const Case cases[] = {
      {"n1", "n1"},
      {"node-7.rack_2", "node-7.rack_2"},
      {"node 7", "node-7"},
      {"tab\there", "tab-here"},
      {".hidden", "_hidden"},
      {"..", "_."},
      {"a.b.", "a.b."},
      {"-x", "-x"},
      {"caf\xc3\xa9", "caf--"},  // both bytes of é
      {"\xe2\x9c\x93ok", "---ok"},
      {"semi;colon=x", "semi-colon-x"},
      {"back\\slash", "back-slash"},
      {std::string("nul\0byte", 8), "nul-byte"},
      {std::string(200, 'a'), std::string(kMaxWorkerName, 'a')},
      {"." + std::string(100, 'b'), "_" + std::string(kMaxWorkerName - 1, 'b')},
  };
  for (const Case& c : cases) {
    auto got = check_worker_name(c.given);
    ASSERT_TRUE(got.ok()) << c.given << ": " << got.error().message();
    EXPECT_EQ(*got, c.want) << c.given;
    // Reducing is idempotent: a reduced name is its own reduction.
    EXPECT_EQ(check_worker_name(*got).value(), *got);
  }
}

TEST(WorkerName, RefusesEmptyAndPathSeparators) {
  const std::string refused[] = {"", "a/b", "/", "/abs", "trailing/", std::string(100, 'x') + "/"};
  for (const std::string& given : refused) {
    auto got = check_worker_name(given);
    ASSERT_FALSE(got.ok()) << given;
    EXPECT_EQ(got.error().code(), Errc::kInvalidInput) << given;
    EXPECT_NE(got.error().message().find("worker name"), std::string::npos)
        << got.error().message();
  }
  auto slash = check_worker_name("a/b");
  ASSERT_FALSE(slash.ok());
  EXPECT_NE(slash.error().message().find("\"a/b\""), std::string::npos) << slash.error().message();
  EXPECT_NE(slash.error().message().find("'/'"), std::string::npos) << slash.error().message();
  auto empty = check_worker_name("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("empty"), std::string::npos);
}

TEST(WorkerName, GeneratedNamesDifferAndNeedNoReducing) {
  FakeClock clock;
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string n = generate_worker_name(clock, 4242);
    EXPECT_EQ(n.rfind("w", 0), 0u) << n;
    EXPECT_NE(n.find("-4242-"), std::string::npos) << n;
    auto checked = check_worker_name(n);
    ASSERT_TRUE(checked.ok()) << n;
    EXPECT_EQ(*checked, n);
    EXPECT_LE(n.size(), kMaxWorkerName);
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 50u);  // the same clock and pid: the counter tells them apart
  // The clock part is 1,700,000,000,000 ms since the epoch in base 36.
  EXPECT_EQ(generate_worker_name(clock, 1).rfind("wloyw3v28-1-", 0), 0u)
      << generate_worker_name(clock, 1);
  clock.advance(1s);
  EXPECT_NE(generate_worker_name(clock, 1).rfind("wloyw3v28-1-", 0), 0u);
}

// ---- Durations --------------------------------------------------------------------------

TEST(ParseDuration, AcceptsUnitsAndBareSeconds) {
  struct Case {
    const char* text;
    std::chrono::milliseconds want;
  };
  const Case cases[] = {
      {"250ms", 250ms}, {"30s", 30s},   {"10m", 10min},     {"2h", 2h},
      {"90", 90s},      {"0.5", 500ms}, {"1.5m", 90s},      {"0.25h", 15min},
      {"1ms", 1ms},     {"007s", 7s},   {"1.0009", 1000ms}, {".5s", 500ms},
      {"1d", 24h},      {"0.5d", 12h},
  };
  for (const Case& c : cases) {
    auto got = parse_duration(c.text, "--lease");
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.error().message();
    EXPECT_EQ(got->count(), c.want.count()) << c.text;
  }
}

TEST(ParseDuration, RefusesWhatIsNotAPositiveDuration) {
  const char* refused[] = {"",
                           "0",
                           "0s",
                           "0.0",
                           "0.4ms",
                           "-1s",
                           "+1s",
                           "10x",
                           "1e9h",
                           "s",
                           "ms",
                           ".",
                           "1.s",
                           " 1s",
                           "3.",
                           "1s ",
                           "1 s",
                           "1S",
                           "1sec",
                           "1D",
                           "1h30m",
                           "1..5s",
                           "nan",
                           "inf",
                           "1,5s",
                           "9999999999999999999999h",
                           "99999999999999999h",
                           "18446744073709551615ms",
                           "9223372036854775808ms"};
  for (const char* text : refused) {
    auto got = parse_duration(text, "--lease");
    ASSERT_FALSE(got.ok()) << text << " -> " << got->count();
    EXPECT_EQ(got.error().code(), Errc::kInvalidInput) << text;
    EXPECT_EQ(got.error().message().rfind("--lease \"", 0), 0u) << got.error().message();
  }
  auto big = parse_duration("99999999999999999h", "--lease");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("too large"), std::string::npos);
  EXPECT_TRUE(parse_duration("9223372036854775807ms", "--lease").ok());
}

TEST(DurationText, WritesWhatParseDurationReadsBack) {
  const std::pair<std::chrono::milliseconds, const char*> cases[] = {
      {2h, "2h"}, {30min, "30m"}, {90s, "90s"}, {250ms, "250ms"}, {1500ms, "1500ms"},
      {0ms, "0ms"}, {48h, "48h"}};
  for (const auto& [d, text] : cases) {
    EXPECT_EQ(duration_text(d), text);
    if (d.count() > 0) EXPECT_EQ(*parse_duration(duration_text(d), "x"), d);
  }
}

// ---- The cache lock ---------------------------------------------------------------------

class CacheLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "berth-worker-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string lock_path() const { return dir_ + "/worker.lock"; }
  std::string read_lock() const {
    std::ifstream in(lock_path());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void write_lock(const std::string& text) const { std::ofstream(lock_path()) << text; }

  std::string dir_;
  FakeClock clock_;
};

TEST_F(CacheLockTest, CreatesTheFileWithTheHolderLine) {
  auto lock = CacheLock::acquire(dir_, "n1", "hostA", clock_);
  ASSERT_TRUE(lock.ok()) << lock.error().message();
  EXPECT_EQ(lock->path(), lock_path());
  EXPECT_EQ(read_lock(), "worker=n1 host=hostA pid=" + std::to_string(getpid()) +
                             " since=2023-11-14T22:13:20Z\n");
}

TEST_F(CacheLockTest, ASecondWorkerIsRefusedNamingThePathTheHolderAndTheFix) {
  auto first = CacheLock::acquire(dir_, "n1", "hostA", clock_);
  ASSERT_TRUE(first.ok());
  auto second = CacheLock::acquire(dir_, "n2", "hostA", clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), Errc::kRefused);
  const std::string& m = second.error().message();
  EXPECT_NE(m.find(lock_path()), std::string::npos) << m;
  EXPECT_NE(m.find("worker=n1 host=hostA pid="), std::string::npos) << m;
  EXPECT_NE(m.find("delete " + lock_path()), std::string::npos) << m;
  EXPECT_NE(m.find("if no worker is using " + dir_), std::string::npos) << m;
  EXPECT_EQ(m.find("stale"), std::string::npos) << m;  // this process is alive
  // The refusal did not touch the holder's file.
  EXPECT_NE(read_lock().find("worker=n1"), std::string::npos);
}

TEST_F(CacheLockTest, DestructionRemovesTheFile) {
  {
    auto lock = CacheLock::acquire(dir_, "n1", "hostA", clock_);
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(fs::exists(lock_path()));
  }
  EXPECT_FALSE(fs::exists(lock_path()));
  EXPECT_TRUE(CacheLock::acquire(dir_, "n2", "hostA", clock_).ok());
}

TEST_F(CacheLockTest, ALockOfADeadProcessOnThisHostIsReportedStale) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);  // reaped: the pid names nobody now
  write_lock("worker=n9 host=hostA pid=" + std::to_string(child) + " since=2023-11-14T22:13:20Z\n");
  auto lock = CacheLock::acquire(dir_, "n1", "hostA", clock_);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.error().code(), Errc::kRefused);
  const std::string& m = lock.error().message();
  EXPECT_NE(m.find("stale"), std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(child)), std::string::npos) << m;
  EXPECT_NE(m.find("delete " + lock_path()), std::string::npos) << m;
  // The lock is reported, never cleared: a stale lock costs a deletion, not a guess.
  EXPECT_TRUE(fs::exists(lock_path()));
}

TEST_F(CacheLockTest, StalenessIsOnlyClaimedForThisHostAndAPlausiblePid) {
  struct Case {
    const char* what;
    std::string line;
    bool stale;
  };
  const Case cases[] = {
      {"dead pid, this host", "worker=n9 host=hostA pid=4194303 since=x", true},
      {"dead pid, another host", "worker=n9 host=hostB pid=4194303 since=x", false},
      {"live pid, this host", "worker=n9 host=hostA pid=" + std::to_string(getpid()), false},
      {"pid 0 (a process group)", "worker=n9 host=hostA pid=0", false},
      {"negative pid", "worker=n9 host=hostA pid=-1", false},
      {"no pid", "worker=n9 host=hostA", false},
      {"pid past pid_t", "worker=n9 host=hostA pid=99999999999", false},
      {"empty file", "", false},
      {"not a holder line", "\x01\xff garbage", false},
  };
  for (const Case& c : cases) {
    write_lock(c.line);
    auto lock = CacheLock::acquire(dir_, "n1", "hostA", clock_);
    ASSERT_FALSE(lock.ok()) << c.what;
    EXPECT_EQ(lock.error().code(), Errc::kRefused) << c.what;
    EXPECT_EQ(lock.error().message().find("stale") != std::string::npos, c.stale)
        << c.what << ": " << lock.error().message();
    EXPECT_NE(lock.error().message().find("delete " + lock_path()), std::string::npos);
  }
}

TEST_F(CacheLockTest, MovingKeepsExactlyOneOwner) {
  auto lock = CacheLock::acquire(dir_, "n1", "hostA", clock_);
  ASSERT_TRUE(lock.ok());
  {
    CacheLock moved(std::move(*lock));
    EXPECT_EQ(moved.path(), lock_path());
    EXPECT_TRUE(lock->path().empty());
    {
      CacheLock assigned = std::move(moved);
      EXPECT_TRUE(moved.path().empty());
      EXPECT_TRUE(fs::exists(lock_path()));
    }
    // The one owner went out of scope; the moved-from ones must not remove it again
    // (a second worker's lock could be there by then).
    EXPECT_FALSE(fs::exists(lock_path()));
    auto other = CacheLock::acquire(dir_, "n2", "hostA", clock_);
    ASSERT_TRUE(other.ok());
  }
  // `moved` has gone and `other` with it; `lock` (moved-from) is still alive.
  EXPECT_FALSE(fs::exists(lock_path()));
  auto third = CacheLock::acquire(dir_, "n3", "hostA", clock_);
  ASSERT_TRUE(third.ok());
  lock = std::move(third);  // move-assignment onto a moved-from lock
  EXPECT_TRUE(fs::exists(lock_path()));
}

TEST_F(CacheLockTest, MoveAssignmentReleasesTheOldLock) {
  std::string other_dir = dir_ + "/other";
  fs::create_directory(other_dir);
  auto a = CacheLock::acquire(dir_, "n1", "hostA", clock_);
  auto b = CacheLock::acquire(other_dir, "n1", "hostA", clock_);
  ASSERT_TRUE(a.ok() && b.ok());
  *a = std::move(*b);
  EXPECT_FALSE(fs::exists(lock_path()));
  EXPECT_TRUE(fs::exists(other_dir + "/worker.lock"));
  EXPECT_EQ(a->path(), other_dir + "/worker.lock");
}

TEST_F(CacheLockTest, AMissingDirectoryIsAnIoError) {
  auto lock = CacheLock::acquire(dir_ + "/nope", "n1", "hostA", clock_);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.error().code(), Errc::kIo);
  EXPECT_NE(lock.error().message().find(dir_ + "/nope/worker.lock"), std::string::npos);
}

}  // namespace
}  // namespace berth::pipeline
