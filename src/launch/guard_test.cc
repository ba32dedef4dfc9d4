// The guard (guard.h, spec 03 §9), exercised the way it is used: a process that starts
// work through the real spawner is SIGKILLed, and its work must end within a second.
// This test process becomes a child subreaper, so the orphaned work is reparented to it
// and its fate can be read with waitpid.
#include "launch/guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "launch/escalation.h"
#include "launch/spawn.h"

namespace berth::launch {
namespace {

// Forks a "berth" that spawns `sh -c 'sleep 60 & wait'` (a child and a grandchild in
// one group) through the real spawner, reports the group id on a pipe, optionally
// tells the guard to forget it, then waits to be killed.
pid_t fork_berth(bool forget, pid_t* group) {
  int p[2];
  if (::pipe(p) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    SpawnRequest req;
    req.argv = {"/bin/sh", "-c", "sleep 60 & wait"};
    req.envp = {"PATH=/usr/bin:/bin"};
    auto s = Spawner::real().spawn(req, FailureContext{}, nullptr);
    pid_t g = s.ok() ? s->pid : -1;
    if (forget && g > 0) guard::forget(g);
    (void)!::write(p[1], &g, sizeof g);
    for (;;) ::pause();
  }
  ::close(p[1]);
  if (::read(p[0], group, sizeof *group) != static_cast<ssize_t>(sizeof *group)) *group = -1;
  ::close(p[0]);
  return pid;
}

// True when no process of group `g` is left within `limit`, reaping what was
// reparented to this process meanwhile.
bool group_gone_within(pid_t g, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (::kill(-g, 0) != 0 && errno == ESRCH) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(Guard, KillingBerthEndsItsGroupsWithinASecond) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t group = -1;
  pid_t berth = fork_berth(false, &group);
  ASSERT_GT(berth, 0);
  ASSERT_GT(group, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the grandchild exists
  ASSERT_EQ(::kill(-group, 0), 0);
  ASSERT_EQ(::kill(berth, SIGKILL), 0);
  ASSERT_EQ(::waitpid(berth, nullptr, 0), berth);
  EXPECT_TRUE(group_gone_within(group, std::chrono::milliseconds(1000)));
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Guard, AForgottenGroupIsLeftAlone) {
  // What forget() is for: a group berth has ended may be reused; the guard must not
  // signal it again. Here the group is still alive, which makes the effect visible.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t group = -1;
  pid_t berth = fork_berth(true, &group);
  ASSERT_GT(berth, 0);
  ASSERT_GT(group, 0);
  ASSERT_EQ(::kill(berth, SIGKILL), 0);
  ASSERT_EQ(::waitpid(berth, nullptr, 0), berth);
  EXPECT_FALSE(group_gone_within(group, std::chrono::milliseconds(800)));
  signal_group(group, SIGKILL);
  EXPECT_TRUE(group_gone_within(group, std::chrono::milliseconds(2000)));
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
}  // namespace berth::launch
