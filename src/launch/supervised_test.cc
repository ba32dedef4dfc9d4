// The supervising core (supervised.h) and the escalation schedule (escalation.h): a
// child's leftovers go with it when it is reaped (or stay, when asked), a child that
// ignores SIGTERM is ended by the SIGKILL the schedule sends after the grace, and
// reaping one child never takes another child of the process.
#include "launch/supervised.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "launch/escalation.h"
#include "launch/testing.h"
#include "util/fake_clock_for_test.h"

namespace berth::launch {
namespace {

using std::chrono::milliseconds;

SpawnRequest sh(const std::string& script) {
  SpawnRequest r;
  r.argv = {"/bin/sh", "-c", script};
  r.envp = {"PATH=/usr/bin:/bin"};
  return r;
}

// Whether `pid` runs: it exists and is not a zombie (one that has left the group
// lingers as a zombie until whoever adopted it reaps it).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Whether `pid` is a child of this process not yet reaped (other tests' leftovers,
// when the whole binary runs, are not looked at).
bool is_child(pid_t pid) {
  for (pid_t c : testing::children_left()) {
    if (c == pid) return true;
  }
  return false;
}

// Waits (up to 5 s) until `child` is reaped by try_reap(group).
bool reap_within_5s(Supervised& child, Supervised::Group group) {
  for (int i = 0; i < 500; ++i) {
    if (child.try_reap(group)) return true;
    ::poll(nullptr, 0, 10);
  }
  return false;
}

// Waits (up to 5 s) until `pid`, which is not our child, is gone or a zombie.
bool gone_within_5s(pid_t pid) {
  for (int i = 0; i < 500 && alive(pid); ++i) ::poll(nullptr, 0, 10);
  return !alive(pid);
}

// A temporary directory with the file a shell writes its background child's pid to.
struct PidFile {
  std::string dir;
  std::string path;
  PidFile() {
    char tmpl[] = "/tmp/berth-supervised.XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/pid";
  }
  ~PidFile() {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
  pid_t read() const {
    pid_t pid = 0;
    std::ifstream(path) >> pid;
    return pid;
  }
};

TEST(Supervised, AGrandchildLeftInTheGroupIsKilledWhenTheLeaderIsReaped) {
  PidFile pidfile;
  Supervised child;
  ASSERT_TRUE(child.start(Spawner::real(), sh("sleep 30 & echo $! > " + pidfile.path), {}).ok());
  ASSERT_TRUE(reap_within_5s(child, Supervised::Group::kKill));
  ASSERT_TRUE(child.status());
  EXPECT_TRUE(child.status()->ok());
  EXPECT_EQ(child.pidfd(), -1);
  EXPECT_FALSE(child.running());
  pid_t sleeper = pidfile.read();
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(gone_within_5s(sleeper));
}

TEST(Supervised, LeavingTheGroupKeepsTheGrandchildUntilTheGroupIsKilled) {
  PidFile pidfile;
  Supervised child;
  ASSERT_TRUE(child.start(Spawner::real(), sh("sleep 30 & echo $! > " + pidfile.path), {}).ok());
  ASSERT_TRUE(reap_within_5s(child, Supervised::Group::kLeave));
  pid_t sleeper = pidfile.read();
  ASSERT_GT(sleeper, 0);
  ::poll(nullptr, 0, 100);
  EXPECT_TRUE(alive(sleeper));
  // Only SIGKILL still reaches the group of a reaped leader.
  EXPECT_FALSE(child.signal(SIGTERM));
  EXPECT_TRUE(child.signal(SIGKILL));
  EXPECT_TRUE(gone_within_5s(sleeper));
}

TEST(Supervised, AChildIgnoringSigtermIsKilledOnlyWhenTheGraceIsSpent) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  SpawnRequest req;
  req.argv = {testing::helper("ignore_term")};
  req.stdout_fd = out[1];
  Supervised child;
  ASSERT_TRUE(child.start(Spawner::real(), req, {}).ok());
  ::close(out[1]);
  char ready[6] = {};
  ASSERT_EQ(::read(out[0], ready, 6), 6);  // "ready\n": SIGTERM is ignored by now
  ::close(out[0]);

  FakeClock clock;
  Escalation escalation(clock);
  escalation.begin(milliseconds(300));
  for (int sig : escalation.due()) child.signal(sig);
  // SIGCONT and SIGTERM went out; it ignores them, and the grace has not passed.
  ::poll(nullptr, 0, 200);
  EXPECT_FALSE(child.try_reap());
  clock.advance(milliseconds(299));
  EXPECT_TRUE(escalation.due().empty());
  EXPECT_FALSE(child.try_reap());
  clock.advance(milliseconds(1));
  for (int sig : escalation.due()) child.signal(sig);
  EXPECT_TRUE(escalation.done());
  child.reap();
  ASSERT_TRUE(child.status());
  EXPECT_EQ(child.status()->kind, ExitStatus::kSignaled);
  EXPECT_EQ(child.status()->signal, SIGKILL);
}

TEST(Supervised, ReapingNeverTakesAnotherChildOfTheProcess) {
  // A child of the process that is not supervised, already ended.
  pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) ::_exit(9);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(other), &info, WEXITED | WNOWAIT), 0);

  Supervised child;
  ASSERT_TRUE(child.start(Spawner::real(), sh("exit 4"), {}).ok());
  ASSERT_TRUE(reap_within_5s(child, Supervised::Group::kKill));
  EXPECT_EQ(child.status()->exit_code(), 4);
  // The other child is still there to be reaped by whoever started it, status intact.
  int status = 0;
  ASSERT_EQ(::waitpid(other, &status, WNOHANG), other);
  EXPECT_EQ(decode_wait_status(status).exit_code(), 9);
}

TEST(Supervised, AChildReapedElsewhereIsLostNotWaitedForForEver) {
  Supervised child;
  ASSERT_TRUE(child.start(Spawner::real(), sh("exit 0"), {}).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid(), &status, 0), child.pid());
  EXPECT_TRUE(child.try_reap());
  EXPECT_TRUE(child.lost());
  EXPECT_FALSE(child.status());
  EXPECT_FALSE(is_child(child.pid()));
}

TEST(Supervised, NothingIsSignalledOrReapedBeforeTheStart) {
  Supervised child;
  EXPECT_FALSE(child.started());
  EXPECT_FALSE(child.try_reap());
  EXPECT_FALSE(child.signal(SIGKILL));
  child.reap();  // returns at once
  EXPECT_FALSE(child.lost());
}

TEST(Supervised, AFailedStartLeavesNoChild) {
  SpawnRequest req;
  req.argv = {"/nonexistent/berth-x"};
  Supervised child;
  pid_t forked = -1;
  auto started = child.start(Spawner::real(), req, {}, [&](pid_t pid) { forked = pid; });
  EXPECT_FALSE(started.ok());
  EXPECT_GT(forked, 0);
  EXPECT_EQ(child.pid(), -1);
  EXPECT_FALSE(child.running());
  EXPECT_FALSE(is_child(forked));
}

TEST(Escalation, StepsFallDueOnTheClockInTheTablesOrder) {
  FakeClock clock;
  Escalation e(clock);
  EXPECT_TRUE(e.due().empty());  // not begun
  EXPECT_FALSE(e.next_at());
  e.begin(milliseconds(500));
  EXPECT_EQ(e.due(), (std::vector<int>{SIGCONT, SIGTERM}));
  EXPECT_TRUE(e.due().empty());
  ASSERT_TRUE(e.next_at());
  EXPECT_EQ(*e.next_at(), clock.steady() + milliseconds(500));
  clock.advance(milliseconds(250));
  e.begin(milliseconds(0));  // a second begin does not restart the walk
  EXPECT_TRUE(e.due().empty());
  clock.advance(milliseconds(250));
  EXPECT_EQ(e.due(), (std::vector<int>{SIGKILL}));
  EXPECT_TRUE(e.done());
  EXPECT_FALSE(e.next_at());
  EXPECT_TRUE(e.due().empty());
}

TEST(Escalation, ANegativeGraceMeansNone) {
  FakeClock clock;
  Escalation e(clock);
  e.begin(milliseconds(-5));
  EXPECT_EQ(e.due(), (std::vector<int>{SIGCONT, SIGTERM, SIGKILL}));
}

TEST(PollTimeout, WakesJustPastTheWakeWithinAMinute) {
  using std::chrono::steady_clock;
  const steady_clock::time_point now{std::chrono::seconds(100)};
  struct Case {
    std::optional<steady_clock::time_point> wake;
    int want;
  };
  const Case cases[] = {
      {std::nullopt, -1},
      {now, 1},
      {now - milliseconds(40), 0},
      {now + milliseconds(10), 11},
      {now + std::chrono::hours(2), 60'000},
  };
  for (const Case& c : cases) EXPECT_EQ(poll_timeout_ms(c.wake, now), c.want);
}

}  // namespace
}  // namespace berth::launch
