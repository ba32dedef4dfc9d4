#include "launch/status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace berth::launch {
namespace {

// Forks a child that runs `body` (which must end the process) and returns its raw
// wait status, so each case decodes what the kernel really reports.
int status_of(const std::function<void()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    // No core files from the signal cases: they would litter the build tree and
    // slow the test down.
    rlimit none{0, 0};
    setrlimit(RLIMIT_CORE, &none);
    body();
    _exit(100);  // the body did not end the process: the test is wrong
  }
  EXPECT_GT(pid, 0);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

std::string outcome(const ExitStatus& s) {
  return describe(s) + " -> " + std::to_string(s.exit_code()) + (s.ok() ? " ok" : "");
}

TEST(Status, DecodesRealProcesses) {
  struct Case {
    const char* what;
    std::function<void()> body;
    const char* want;
  };
  const Case cases[] = {
      {"exit 0", [] { _exit(0); }, "exited with status 0 -> 0 ok"},
      {"exit 3 stays 3", [] { _exit(3); }, "exited with status 3 -> 3"},
      {"exit 255", [] { _exit(255); }, "exited with status 255 -> 255"},
      {"exit 256 wraps", [] { _exit(256); }, "exited with status 0 -> 0 ok"},
      {"SIGTERM is 143", [] { raise(SIGTERM); }, "killed by signal 15 (SIGTERM) -> 143"},
      {"SIGKILL is 137", [] { raise(SIGKILL); }, "killed by signal 9 (SIGKILL) -> 137"},
      {"SIGINT is 130", [] { raise(SIGINT); }, "killed by signal 2 (SIGINT) -> 130"},
      // RLIMIT_CORE is 0, so no core is written and none is reported. The default
      // disposition first: a sanitizer build catches SIGSEGV itself and exits 1.
      {"SIGSEGV, no core",
       [] {
         signal(SIGSEGV, SIG_DFL);
         raise(SIGSEGV);
       },
       "killed by signal 11 (SIGSEGV) -> 139"},
      {"abort", [] { abort(); }, "killed by signal 6 (SIGABRT) -> 134"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(outcome(decode_wait_status(status_of(c.body))), c.want);
  }
}

TEST(Status, DecodesFields) {
  ExitStatus e = decode_wait_status(status_of([] { _exit(3); }));
  EXPECT_EQ(e.kind, ExitStatus::kExited);
  EXPECT_EQ(e.code, 3);
  EXPECT_EQ(e.signal, 0);
  EXPECT_FALSE(e.core_dumped);
  ExitStatus s = decode_wait_status(status_of([] { raise(SIGTERM); }));
  EXPECT_EQ(s.kind, ExitStatus::kSignaled);
  EXPECT_EQ(s.signal, SIGTERM);
  EXPECT_EQ(s.code, 0);
  EXPECT_FALSE(s.ok());
}

#ifdef __linux__
// Linux's encoding of a wait status, for what no test should provoke for real: a core
// dump, and the stopped/continued statuses the reaper never asks for.
TEST(Status, DecodesLinuxEncodings) {
  struct Case {
    int status;
    const char* want;
  };
  const Case cases[] = {
      {0x0000, "exited with status 0 -> 0 ok"},
      {0x0300, "exited with status 3 -> 3"},
      {0x000f, "killed by signal 15 (SIGTERM) -> 143"},
      {0x008b, "killed by signal 11 (SIGSEGV) (core dumped) -> 139"},
      // Never success, even though nothing exited.
      {0x137f, "killed by signal 19 (SIGSTOP) -> 147"},
      {0xffff, "killed by signal 18 (SIGCONT) -> 146"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.status);
    EXPECT_EQ(outcome(decode_wait_status(c.status)), c.want);
  }
  EXPECT_TRUE(decode_wait_status(0x008b).core_dumped);
}
#endif

TEST(Status, NamesSignals) {
  struct Case {
    int sig;
    const char* want;
  };
  const Case cases[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGKILL, "SIGKILL"},
      {SIGSEGV, "SIGSEGV"}, {SIGTERM, "SIGTERM"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
      {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}, {SIGBUS, "SIGBUS"},
      {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}, {SIGSYS, "SIGSYS"},   {0, "signal 0"},
      {-1, "signal -1"},    {999, "signal 999"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sig);
    EXPECT_EQ(signal_name(c.sig), c.want);
  }
  EXPECT_EQ(signal_name(SIGRTMIN), "SIGRTMIN");
  EXPECT_EQ(signal_name(SIGRTMIN + 3), "SIGRTMIN+3");
  EXPECT_EQ(signal_name(SIGRTMAX + 1), "signal " + std::to_string(SIGRTMAX + 1));
}

TEST(Status, EveryClassicSignalHasAName) {
  // 1..31 are the classic signals on Linux; none may fall back to "signal N".
  for (int sig = 1; sig < 32; ++sig) {
    SCOPED_TRACE(sig);
    EXPECT_EQ(signal_name(sig).rfind("SIG", 0), 0u) << signal_name(sig);
  }
}

TEST(Status, ExitCodeFollowsTheShell) {
  ExitStatus term{ExitStatus::kSignaled, 0, SIGTERM, false};
  ExitStatus kill{ExitStatus::kSignaled, 0, SIGKILL, false};
  ExitStatus three{ExitStatus::kExited, 3, 0, false};
  EXPECT_EQ(term.exit_code(), 143);
  EXPECT_EQ(kill.exit_code(), 137);
  EXPECT_EQ(three.exit_code(), 3);
  EXPECT_EQ(describe(three), "exited with status 3");
}

}  // namespace
}  // namespace berth::launch
