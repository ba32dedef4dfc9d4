// capture() against real processes: the helper programs of tests/helpers (testing.h).
#include "launch/capture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "launch/testing.h"

namespace berth::launch {
namespace {

using std::chrono::milliseconds;
using testing::count_open_fds;
using ::testing::HasSubstr;
using testing::helper;
using ::testing::StartsWith;

// Whether `pid` is gone: no such process, or a zombie waiting for init. SIGKILL is
// delivered asynchronously, so this waits up to 2 s.
bool gone(pid_t pid) {
  for (int i = 0; i < 40; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    if (!(stat >> pid_field >> comm >> state) || state == "Z") return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(helper("copy_stdin").c_str(), X_OK), 0)
        << "helpers not built at " << testing::helpers_dir() << " (target berth_helpers)";
    fds_before_ = count_open_fds();
  }
  void TearDown() override {
    // Every capture reaps its child and closes its pipes, whatever happened.
    EXPECT_EQ(count_open_fds(), fds_before_) << "a descriptor leaked";
    EXPECT_TRUE(testing::children_left().empty()) << "a child was left unreaped";
  }

  static CaptureRequest request(std::vector<std::string> argv) {
    CaptureRequest r;
    r.argv = std::move(argv);
    r.envp = {"PATH=/usr/bin:/bin"};
    return r;
  }

  int fds_before_ = 0;
};

TEST_F(CaptureTest, StdoutAndStderrComeBackApart) {
  CaptureRequest r = request({helper("copy_stdin"), "3"});
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(c->status.ok());
  EXPECT_EQ(c->out, "...");
  EXPECT_EQ(c->err, "read 0 bytes\n");
}

TEST_F(CaptureTest, MergedStderrFollowsStdoutInOrder) {
  CaptureRequest r = request({helper("copy_stdin"), "2"});
  r.input = "ab";
  r.merge_stderr = true;
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->out, "..abread 2 bytes\n");
  EXPECT_EQ(c->err, "");
}

TEST_F(CaptureTest, StdinIsFedAndClosed) {
  CaptureRequest r = request({helper("copy_stdin")});
  r.input = "line one\nline two\n";
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->out, "line one\nline two\n");
  EXPECT_EQ(c->err, "read 18 bytes\n");
}

TEST_F(CaptureTest, NoInputIsDevNull) {
  auto c = capture(request({helper("copy_stdin")}));
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->out, "");
}

TEST_F(CaptureTest, WritingBeforeReadingDoesNotDeadlock) {
  // The child fills its stdout pipe many times over before it reads a byte of a stdin
  // that is itself many pipes long: berth must read while it writes.
  std::string big(4 << 20, 'x');
  CaptureRequest r = request({helper("copy_stdin"), std::to_string(2 << 20)});
  r.input = big;
  r.max_output = 8 << 20;
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->out.size(), (2u << 20) + big.size());
  EXPECT_EQ(c->out.substr(2 << 20), big);
  EXPECT_EQ(c->err, "read 4194304 bytes\n");
}

TEST_F(CaptureTest, ChildThatDoesNotReadItsStdinIsNotAnError) {
  // EPIPE (and the SIGPIPE that would end this test) when the child exits unread.
  std::string big(4 << 20, 'y');
  CaptureRequest r = request({helper("exit_n"), "0"});
  r.input = big;
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(c->status.ok());
}

TEST_F(CaptureTest, ExitCodeIsDecoded) {
  auto c = capture(request({helper("exit_n"), "3"}));
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->status.kind, ExitStatus::kExited);
  EXPECT_EQ(c->status.code, 3);
  EXPECT_EQ(describe(c->status), "exited with status 3");
}

TEST_F(CaptureTest, DeathBySignalIsDecoded) {
  auto c = capture(request({"sh", "-c", "kill -USR1 $$"}));
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->status.kind, ExitStatus::kSignaled);
  EXPECT_EQ(c->status.signal, SIGUSR1);
  EXPECT_EQ(c->status.exit_code(), 128 + SIGUSR1);
}

TEST_F(CaptureTest, TheEnvironmentIsTheOneGiven) {
  CaptureRequest r = request({helper("print_env")});
  r.envp = {"GREETING=hello", "PATH=/nowhere"};
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  // Nothing of the test's own environment (HOME, BERTH_HELPERS_DIR) reaches it.
  EXPECT_EQ(c->out, "GREETING=hello\nPATH=/nowhere\n");
}

TEST_F(CaptureTest, RunsInTheWorkingDirectoryGiven) {
  CaptureRequest r = request({helper("print_cwd")});
  r.cwd = "/tmp";
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->out, "/tmp\n");
}

TEST_F(CaptureTest, ProgramFoundNowhereIsNotFoundAndNamed) {
  auto c = capture(request({"berth-no-such-program", "--version"}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), Errc::kNotFound);
  EXPECT_EQ(c.error().message(),
            "cannot run 'berth-no-such-program --version': executable 'berth-no-such-program' "
            "not found on the child's PATH (/usr/bin:/bin)");
}

TEST_F(CaptureTest, EmptyCommandIsInvalid) {
  auto c = capture(request({}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), Errc::kInvalidInput);
}

TEST_F(CaptureTest, OutputPastTheLimitIsAnErrorNamingIt) {
  CaptureRequest r = request({helper("copy_stdin"), "100000"});
  r.max_output = 1000;
  auto c = capture(r);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), Errc::kRefused);
  EXPECT_THAT(c.error().message(), HasSubstr("printed more than 1000 bytes"));
  EXPECT_THAT(c.error().message(), StartsWith("'" + helper("copy_stdin") + " 100000'"));
}

TEST_F(CaptureTest, OutputExactlyAtTheLimitIsFine) {
  CaptureRequest r = request({helper("copy_stdin"), "1000"});
  r.max_output = 1000;
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->out.size(), 1000u);
}

TEST_F(CaptureTest, OnlyTheTailOfStderrIsKept) {
  CaptureRequest r =
      request({"sh", "-c", "i=0; while [ $i -lt 500 ]; do echo line$i >&2; i=$((i+1)); done"});
  r.stderr_tail = 40;
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_LE(c->err.size(), 40u);
  EXPECT_THAT(c->err, ::testing::EndsWith("line498\nline499\n"));
}

TEST_F(CaptureTest, TimeoutEndsTheWholeGroupAndNamesCommandAndLimit) {
  // The child ignores SIGTERM and so does its grandchild: only the group's SIGKILL
  // after the grace ends them. Both write their pids to a file, the way out of a
  // capture that fails.
  char tmpl[] = "/tmp/berth_capture_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  CaptureRequest r = request({"sh", "-c", "echo $$ >\"$1\"; exec \"$0\" >\"$2\"",
                              helper("spawn_grandchild"), dir + "/child", dir + "/grandchild"});
  r.timeout = milliseconds(300);
  r.grace = milliseconds(100);
  auto t0 = std::chrono::steady_clock::now();
  auto c = capture(r);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), Errc::kIo);
  EXPECT_THAT(c.error().message(), HasSubstr("did not finish within 0.3 s"));
  EXPECT_THAT(c.error().message(), HasSubstr("spawn_grandchild"));
  EXPECT_LT(took, milliseconds(3000));
  for (const char* who : {"/child", "/grandchild"}) {
    pid_t pid = 0;
    std::ifstream(dir + who) >> pid;
    ASSERT_GT(pid, 0) << who << " wrote no pid";
    EXPECT_TRUE(gone(pid)) << who << " " << pid << " survived";
    if (!gone(pid)) kill(pid, SIGKILL);
    unlink((dir + who).c_str());
  }
  rmdir(dir.c_str());
}

TEST_F(CaptureTest, NoTimeoutMeansNone) {
  CaptureRequest r = request({helper("sleep_s"), "0.3"});
  r.timeout = std::nullopt;
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(c->status.ok());
}

TEST_F(CaptureTest, BackgroundLeftoversNeitherHoldTheCallNorOutliveIt) {
  // The shell exits at once; its background sleep holds stdout open. The call returns
  // with what the shell printed, and the sleep is ended with the group.
  CaptureRequest r = request({"sh", "-c", "\"$0\" 30 & echo $!", helper("sleep_s")});
  auto t0 = std::chrono::steady_clock::now();
  auto c = capture(r);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(5000));
  pid_t left = static_cast<pid_t>(std::stol(c->out));
  EXPECT_TRUE(gone(left)) << "background process " << left << " survived";
}

TEST_F(CaptureTest, ManyCapturesAtOnceKeepTheirOwnOutput) {
  // The executor canonicalises on several threads: no capture may see another's pipe.
  std::vector<std::thread> threads;
  std::vector<std::string> got(8);
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&got, i] {
      CaptureRequest r;
      r.argv = {helper("copy_stdin")};
      r.envp = {"PATH=/usr/bin:/bin"};
      std::string in(100000 + i, static_cast<char>('a' + i));
      r.input = in;
      auto c = capture(r);
      got[i] = c.ok() ? c->out : c.error().message();
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], std::string(100000 + i, static_cast<char>('a' + i))) << i;
  }
}

}  // namespace
}  // namespace berth::launch
