#include "launch/escalation.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "launch/status.h"

namespace berth::launch {
namespace {

using std::chrono::milliseconds;

std::string render(const std::vector<EscalationStep>& table) {
  std::string out;
  for (const EscalationStep& s : table) {
    if (!out.empty()) out += ", ";
    out += signal_name(s.signal) + "@" + std::to_string(s.after.count()) + "ms";
  }
  return out;
}

TEST(Escalation, TableIsContThenTermThenKillAfterTheGrace) {
  struct Case {
    milliseconds grace;
    const char* want;
  };
  const Case cases[] = {
      {kDefaultGrace, "SIGCONT@0ms, SIGTERM@0ms, SIGKILL@300ms"},
      {milliseconds(0), "SIGCONT@0ms, SIGTERM@0ms, SIGKILL@0ms"},
      {milliseconds(5000), "SIGCONT@0ms, SIGTERM@0ms, SIGKILL@5000ms"},
      {milliseconds(-10), "SIGCONT@0ms, SIGTERM@0ms, SIGKILL@0ms"},  // never negative
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.grace.count());
    EXPECT_EQ(render(escalation_table(c.grace)), c.want);
  }
  EXPECT_EQ(render(escalation_table()), "SIGCONT@0ms, SIGTERM@0ms, SIGKILL@300ms");
}

// With signal 0 nothing is delivered whatever the target, so these calls are harmless
// even if signal_group were broken; had it called kill, kill(x, 0) would have
// succeeded for berth's own group and for pid 1, and returned true.
TEST(Escalation, RefusesNonPositiveAndOwnGroupsWithTheNullSignal) {
  const int refused[] = {0, -1, -2, -getpid(), INT_MIN, static_cast<int>(getpgrp())};
  for (int pgid : refused) {
    SCOPED_TRACE(pgid);
    EXPECT_FALSE(signal_group(pgid, 0));
  }
}

volatile sig_atomic_t g_got_usr1 = 0;
void on_usr1(int) { g_got_usr1 = 1; }

// The real signal, in a child that first makes a process group of its own: if
// signal_group ever sent kill(0) or kill(-own pgrp), only the child would hear it, and
// the handler would tell. (A buggy kill(-1) or kill(-negative) is not tried with a real
// signal anywhere: it would reach every process the user may signal.)
TEST(Escalation, RefusesOwnGroupWithoutSignalling) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setpgid(0, 0) != 0) _exit(10);
    struct sigaction sa {};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, nullptr) != 0) _exit(11);
    if (signal_group(0, SIGUSR1)) _exit(1);
    if (signal_group(getpgrp(), SIGUSR1)) _exit(2);
    if (signal_group(getpid(), SIGUSR1)) _exit(3);  // the same group, by leader pid
    // kill() to oneself delivers before it returns, so the flag is settled here.
    _exit(g_got_usr1 ? 4 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(describe(decode_wait_status(status)), "exited with status 0");
}

TEST(Escalation, SignalsAGroupAndReportsOneThatIsGone) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    for (;;) pause();
  }
  // Both sides set the group, so it exists whichever runs first.
  setpgid(pid, pid);
  EXPECT_TRUE(signal_group(pid, SIGTERM));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(decode_wait_status(status).exit_code(), 143);
  // Reaped: the group no longer exists (ESRCH).
  EXPECT_FALSE(signal_group(pid, SIGTERM));
}

TEST(Escalation, ContWakesAStoppedGroupSoTermCanLand) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    for (;;) pause();
  }
  setpgid(pid, pid);
  ASSERT_TRUE(signal_group(pid, SIGSTOP));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  // The table's order, without the waits: SIGCONT, SIGTERM (SIGKILL never needed).
  for (const EscalationStep& s : escalation_table(milliseconds(0))) {
    if (s.signal == SIGKILL) break;
    EXPECT_TRUE(signal_group(pid, s.signal)) << signal_name(s.signal);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(describe(decode_wait_status(status)), "killed by signal 15 (SIGTERM)");
}

}  // namespace
}  // namespace berth::launch
