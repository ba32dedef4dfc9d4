#include "launch/job.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <fstream>
#include <filesystem>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cstdlib>
#include <thread>

#include "launch/testing.h"
#include "util/fake_clock_for_test.h"

namespace berth::launch {
namespace {

int open_fds() { return testing::count_open_fds(); }

struct Captured {
  std::string out, err;
  OutputSinks sinks() {
    return OutputSinks{[this](std::string_view s) { out.append(s); },
                       [this](std::string_view s) { err.append(s); }};
  }
};

JobSpec job(std::vector<std::string> argv, int ranks) {
  JobSpec s;
  AppSpec a;
  a.argv = std::move(argv);
  a.ranks = ranks;
  s.apps.push_back(a);
  s.bind = BindTo::kNone;
  s.node = "testnode";
  s.stdin_mode = StdinMode::kNone;
  return s;
}

Env path_env() {
  Env e;
  e.set("PATH", "/usr/bin:/bin");
  return e;
}

// The wire-up servers' threads (started by the first job) must block every signal
// berth takes through a signalfd: the kernel gives a process signal to any thread that
// does not block it, and a SIGINT taken by libpmix's thread never reaches the job.
TEST(Job, WireupThreadsTakeNoSignals) {
  Captured c;
  ASSERT_TRUE(run_job(job({"/bin/true"}, 2), path_env(), Spawner::real(), c.sinks()).ok());
  const std::string self = std::to_string(syscall(SYS_gettid));
  int others = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string tid = e.path().filename();
    if (tid == self) continue;
    std::ifstream status(e.path() / "status");
    std::string line;
    uint64_t blocked = 0;
    while (std::getline(status, line)) {
      if (line.rfind("SigBlk:", 0) == 0) blocked = std::stoull(line.substr(7), nullptr, 16);
    }
    ++others;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) {
      EXPECT_TRUE(blocked & (1ULL << (sig - 1))) << "thread " << tid << " takes signal " << sig;
    }
  }
  EXPECT_GE(others, 2) << "the PMIx and PMI servers' threads";
}

TEST(Job, ThousandRunsOfEightNeverLoseAChildOrLeak) {
  // The wire-up servers start with the first job and live as long as the process: the
  // descriptors they hold are counted in `before`.
  {
    Captured c;
    ASSERT_TRUE(run_job(job({"/bin/true"}, 2), path_env(), Spawner::real(), c.sinks()).ok());
  }
  int before = open_fds();
  for (int i = 0; i < 1000; ++i) {
    Captured c;
    auto r = run_job(job({"/bin/true"}, 8), path_env(), Spawner::real(), c.sinks());
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->exit_code, 0) << i;
    ASSERT_EQ(r->ranks.size(), 8u);
    for (const auto& rank : r->ranks) {
      ASSERT_TRUE(rank.started) << i;
      ASSERT_TRUE(rank.status.has_value()) << "run " << i << " lost rank " << rank.rank;
      ASSERT_TRUE(rank.status->ok());
    }
  }
  EXPECT_EQ(open_fds(), before) << "descriptors leaked";
  // Every child was reaped: there is nothing left to wait for.
  EXPECT_TRUE(testing::children_left().empty());
}

TEST(Job, FirstFailureDecidesAndIsReported) {
  Captured c;
  JobSpec s = job({"/bin/sh", "-c", "exit 3"}, 1);
  AppSpec sleeper;
  sleeper.argv = {"/bin/sleep", "30"};
  s.apps.insert(s.apps.begin(), sleeper);
  s.grace = std::chrono::milliseconds(100);
  auto start = std::chrono::steady_clock::now();
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(r->messages.empty());
  EXPECT_NE(r->messages[0].find("rank 1 (/bin/sh) on testnode exited with status 3"),
            std::string::npos)
      << r->messages[0];
  ASSERT_TRUE(r->ranks[0].status.has_value());
  EXPECT_EQ(r->ranks[0].status->exit_code(), 143);  // the sleeper, ended by SIGTERM
}

TEST(Job, KeepGoingLetsOthersFinish) {
  Captured c;
  JobSpec s = job({"/bin/sh", "-c", "exit 2"}, 1);
  AppSpec ok;
  ok.argv = {"/bin/sh", "-c", "sleep 0.2; echo done"};
  s.apps.push_back(ok);
  s.keep_going = true;
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_EQ(c.out, "done\n");
}

TEST(Job, TimeoutEndsTheJobWith124) {
  Captured c;
  JobSpec s = job({"/bin/sleep", "30"}, 2);
  s.timeout = std::chrono::milliseconds(200);
  s.grace = std::chrono::milliseconds(100);
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 124);
  EXPECT_TRUE(r->timed_out);
}

TEST(Job, ARankExiting124IsNotATimeout) {
  Captured c;
  JobSpec s = job({"/bin/sh", "-c", "exit 124"}, 1);
  s.timeout = std::chrono::seconds(30);
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 124);
  EXPECT_FALSE(r->timed_out);
}

TEST(Job, SpawnFailureIsRenderedAndExits127) {
  Captured c;
  auto r = run_job(job({"no-such-berth-program"}, 2), path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
  ASSERT_FALSE(r->messages.empty());
  EXPECT_NE(r->messages[0].find("no-such-berth-program"), std::string::npos);
  EXPECT_FALSE(r->ranks[1].started);  // never started after the abort
}

TEST(Job, TrailingPartialLineIsFlushedAndTagged) {
  Captured c;
  JobSpec s = job({"/usr/bin/printf", "a\\nb"}, 1);
  s.output = OutputMode::kTag;
  s.job_id = "7";
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(c.out, "[7,0]<stdout>: a\n[7,0]<stdout>: b\n");
}

TEST(Job, BindingsTakeOneCorePerRankAcrossApps) {
  JobSpec s = job({"a"}, 2);
  s.bind = BindTo::kCore;
  s.usable_cores = {1, 3, 5, 7};
  AppSpec b;
  b.argv = {"b"};
  b.ranks = 2;
  s.apps.push_back(b);
  auto r = compute_bindings(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cpus, (std::vector<std::vector<int>>{{1}, {3}, {5}, {7}}));
  s.apps[1].ranks = 3;
  auto over = compute_bindings(s);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message().find("bind-to none"), std::string::npos);
  s.apps[1].cpu_set = std::vector<int>{8, 9, 10};
  r = compute_bindings(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cpus[4], std::vector<int>{10});
  s.bind = BindTo::kNone;
  r = compute_bindings(s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cpus[0].empty());
  EXPECT_EQ(r->cpus[2], (std::vector<int>{8, 9, 10}));
}

TEST(Job, RanksTakeTheirCpusPerRankInTurn) {
  // A pipeline step of 2 tasks on cores 4-7: each rank two cores of its own.
  JobSpec s = job({"a"}, 2);
  s.bind = BindTo::kCore;
  s.apps[0].cpu_set = std::vector<int>{4, 5, 6, 7};
  s.apps[0].cpus_per_rank = 2;
  auto r = compute_bindings(s);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus, (std::vector<std::vector<int>>{{4, 5}, {6, 7}}));
  // Across apps without sets of their own, the next app goes on where this one stopped.
  JobSpec m = job({"a"}, 2);
  m.bind = BindTo::kCore;
  m.usable_cores = {0, 1, 2, 3, 4, 5};
  m.apps[0].cpus_per_rank = 2;
  AppSpec b;
  b.argv = {"b"};
  b.ranks = 2;
  m.apps.push_back(b);
  r = compute_bindings(m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cpus, (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4}, {5}}));
  m.apps[1].ranks = 3;
  auto over = compute_bindings(m);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message().find("need 7 cores to bind to 1 each"), std::string::npos)
      << over.error().message();
}

TEST(Job, OversubscribeUnbindsOnlyTheAppThatDoesNotFit) {
  JobSpec s = job({"a"}, 2);
  s.bind = BindTo::kCore;
  s.usable_cores = {1, 3, 5};
  AppSpec b;
  b.argv = {"b"};
  b.ranks = 4;
  s.apps.push_back(b);
  ASSERT_FALSE(compute_bindings(s).ok());  // refused without the flag
  s.oversubscribe = true;
  auto r = compute_bindings(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cpus, (std::vector<std::vector<int>>{{1}, {3}, {}, {}, {}, {}}));
  ASSERT_EQ(r->notices.size(), 1u);
  EXPECT_NE(r->notices[0].find("app 1 has 4 rank(s)"), std::string::npos) << r->notices[0];
  // An app with its own --cpu-set stays within it.
  s.apps[1].cpu_set = std::vector<int>{8, 9};
  r = compute_bindings(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cpus[5], (std::vector<int>{8, 9}));
}

TEST(Job, OversubscribedJobRunsAndSaysSoOnce) {
  Captured c;
  JobSpec s = job({"/bin/true"}, 5);
  s.bind = BindTo::kCore;
  s.usable_cores = {0};
  s.oversubscribe = true;
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(c.err,
            "berth: app 0 has 5 rank(s) and the job 1 usable cores: binding is off for "
            "it (--oversubscribe)\n");
}

TEST(Job, PrefixesAndXml) {
  JobSpec s;
  s.job_id = "12";
  s.node = "n1";
  s.output = OutputMode::kTag;
  EXPECT_EQ(line_prefix(s, 3, 99, false), "[12,3]<stdout>: ");
  s.output = OutputMode::kTagDetailed;
  EXPECT_EQ(line_prefix(s, 3, 99, true), "[12,3][n1:99]<stderr>: ");
  EXPECT_EQ(xml_line(1, false, "a<b&\"c\n"), "<stdout rank=\"1\">a&lt;b&amp;&quot;c</stdout>\n");
}

TEST(Job, TimestampsAreTheJobsClocks) {
  FakeClock clock;
  JobSpec s;
  s.job_id = "12";
  s.output = OutputMode::kTimestamp;
  s.clock = &clock;
  EXPECT_EQ(line_prefix(s, 3, 99, false), "2023-11-14T22:13:20.000Z [12,3]<stdout>: ");
  clock.advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(line_prefix(s, 3, 99, true), "2023-11-14T22:13:21.500Z [12,3]<stderr>: ");
}

TEST(Job, TheTimeoutIsMeasuredOnTheJobsClock) {
  // A clock that does not move: the job's 1 ms never runs out, however long the rank
  // takes in real time.
  FakeClock clock;
  Captured c;
  JobSpec s = job({"/bin/sh", "-c", "sleep 0.3; exit 0"}, 1);
  s.timeout = std::chrono::milliseconds(1);
  s.clock = &clock;
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->timed_out);
}

TEST(Job, MalformedJobsAreRefusedBeforeAnythingStarts) {
  Captured c;
  JobSpec empty;
  EXPECT_FALSE(run_job(empty, path_env(), Spawner::real(), c.sinks()).ok());
  JobSpec zero = job({"/bin/true"}, 0);
  EXPECT_FALSE(run_job(zero, path_env(), Spawner::real(), c.sinks()).ok());
  JobSpec missing = job({"/bin/true"}, 1);
  missing.env.push_back(EnvDirective{EnvDirective::kExport, "BERTH_SURELY_UNSET_VAR", "", "", false});
  auto r = run_job(missing, path_env(), Spawner::real(), c.sinks());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("BERTH_SURELY_UNSET_VAR"), std::string::npos);
}

}  // namespace
}  // namespace berth::launch

namespace berth::launch {
namespace {

TEST(Job, JobsSideBySideInThreadsEachSeeTheirOwnExits) {
  // Two supervisors in one process must not take each other's exits (pidfds, not a
  // shared SIGCHLD).
  std::vector<std::thread> threads;
  std::vector<int> codes(4, -1);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &codes] {
      Captured c;
      JobSpec s = job({"/bin/sh", "-c", "sleep 0.1; exit " + std::to_string(t)}, 2);
      s.own_signals = false;
      auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
      codes[static_cast<size_t>(t)] = r.ok() ? r->exit_code : -2;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(codes, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Job, CancelFdAbortsTheJob) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::thread canceller([w = p[1]] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    ASSERT_EQ(write(w, "x", 1), 1);
  });
  Captured c;
  JobSpec s = job({"/bin/sleep", "30"}, 2);
  s.own_signals = false;
  s.cancel_fd = p[0];
  s.grace = std::chrono::milliseconds(100);
  auto start = std::chrono::steady_clock::now();
  auto r = run_job(s, path_env(), Spawner::real(), c.sinks());
  canceller.join();
  close(p[0]);
  close(p[1]);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 130);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace berth::launch
