// The executor's scheduling, with no process and no sleep: a fake StepRunner decides
// what becomes of each step it is handed, a FakeClock stands for time, and the wait
// seam advances it instead of sleeping (as ninja tests its Builder with a
// FakeCommandRunner). The store is a MemoryStore; leases are real, over it.
#include "pipeline/executor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/fake_runner_for_test.h"
#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/key.h"
#include "pipeline/lease.h"
#include "pipeline/pipeline_file.h"
#include "pipeline/step_cache.h"
#include "pipeline/targets.h"
#include "store/memory_store.h"
#include "util/clock.h"
#include "util/fake_clock_for_test.h"
#include "util/sha256.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("berth-executor-test.{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "results");
    ASSERT_EQ(::pipe2(cancel_, O_CLOEXEC | O_NONBLOCK), 0);
    o_.results_dir = (dir_ / "results").string();
    o_.clock = &clock_;
    o_.runner = &runner_;
    o_.host = "n0";
    o_.cancel_fd = cancel_[0];
    // The wait seam: what is ready now is answered at once; otherwise the test's
    // on_idle may act (end a held step, cancel, publish elsewhere), and a wait with a
    // deadline moves the fake clock to it. A wait with no deadline and nothing to do
    // would be a hang: it fails the test instead.
    o_.wait = [this](pollfd* fds, nfds_t n, int timeout_ms) {
      int got = ::poll(fds, n, 0);
      if (got != 0) return got;
      if (on_idle) on_idle();
      got = ::poll(fds, n, 0);
      if (got != 0) return got;
      if (timeout_ms < 0) {
        ADD_FAILURE() << "the executor would wait for ever";
        ::write(cancel_[1], "x", 1);
        return ::poll(fds, n, 0);
      }
      clock_.advance(std::chrono::milliseconds(timeout_ms));
      waited_ms_ += timeout_ms;
      return 0;
    };
  }
  void TearDown() override {
    ::close(cancel_[0]);
    ::close(cancel_[1]);
    fs::remove_all(dir_);
  }

  // Parses and expands `toml` (no input files: every input is another step's output).
  Graph graph(const std::string& toml) {
    auto f = parse_pipeline(toml, "p.toml");
    EXPECT_TRUE(f.ok()) << f.error().message();
    auto g = expand(*f, [](const std::string&) { return true; });
    EXPECT_TRUE(g.ok()) << g.error().message();
    return std::move(*g);
  }

  RunReport run(const Graph& g, int cores = 2) {
    place::PoolNode node;
    node.name = "n0";
    for (int c = 0; c < cores; ++c) node.cores.push_back(c);
    place::Pool pool({node});
    auto r = run_graph(g, store_, pool, env_, o_);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : RunReport{};
  }

  static std::map<std::string, std::string> states(const RunReport& r) {
    std::map<std::string, std::string> out;
    for (const auto& s : r.steps) out[s.name] = step_state_name(s.state);
    return out;
  }
  static const StepRecord& step(const RunReport& r, const std::string& name) {
    for (const auto& s : r.steps) {
      if (s.name == name) return s;
    }
    static StepRecord none;
    ADD_FAILURE() << "no step " << name;
    return none;
  }

  fs::path dir_;
  int cancel_[2] = {-1, -1};
  FakeClock clock_;
  store::MemoryStore store_;
  FakeRunner runner_{store_};
  Env env_;
  RunOptions o_;
  std::function<void()> on_idle;
  int waited_ms_ = 0;
};

constexpr const char* kChainAndOne = R"(
[[step]]
name = "a"
run = "x"
outputs = ["o"]
[[step]]
name = "b"
run = "y"
inputs = { i = "@a/o" }
outputs = ["o"]
[[step]]
name = "c"
run = "z"
inputs = { i = "@b/o" }
outputs = ["o"]
[[step]]
name = "d"
run = "w"
outputs = ["o"]
)";

TEST_F(ExecutorTest, DependentsRunAfterWhatTheyRead) {
  Graph g = graph(kChainAndOne);
  RunReport r = run(g);
  EXPECT_EQ(states(r),
            (std::map<std::string, std::string>{
                {"a", "executed"}, {"b", "executed"}, {"c", "executed"}, {"d", "executed"}}));
  auto pos = [&](const std::string& n) {
    return std::find(runner_.started.begin(), runner_.started.end(), n) - runner_.started.begin();
  };
  EXPECT_LT(pos("a"), pos("b"));
  EXPECT_LT(pos("b"), pos("c"));
  EXPECT_EQ(r.exit_code(), 0);
}

TEST_F(ExecutorTest, AFailureSkipsItsDependentsAndNothingElse) {
  Graph g = graph(kChainAndOne);
  runner_.outcomes["a"] = {StepState::kFailed, "rank 0 (x) exited with status 1"};
  RunReport r = run(g);
  EXPECT_EQ(states(r),
            (std::map<std::string, std::string>{
                {"a", "failed"}, {"b", "skipped"}, {"c", "skipped"}, {"d", "executed"}}));
  EXPECT_EQ(step(r, "b").reason, "not run: 'a' failed");
  EXPECT_EQ(step(r, "c").reason, "not run: 'a' failed");
  EXPECT_EQ(std::count(runner_.started.begin(), runner_.started.end(), "b"), 0);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ExecutorTest, FailFastStartsNothingAfterTheFirstFailure) {
  // One core: the steps run one at a time, in file order.
  Graph g = graph(R"(
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4"] }
run = "run {i}"
outputs = ["o"]
)");
  runner_.outcomes["s-2"] = {StepState::kFailed, "exited with status 3"};
  o_.fail_fast = true;
  RunReport r = run(g, 1);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"s-1", "s-2"}));
  EXPECT_EQ(states(r),
            (std::map<std::string, std::string>{
                {"s-1", "executed"}, {"s-2", "failed"}, {"s-3", "skipped"}, {"s-4", "skipped"}}));
  EXPECT_EQ(step(r, "s-3").reason, "not run: --fail-fast");
}

// A step that can never fit is refused with the reason, what reads from it is skipped,
// and every other step runs: one impossible step does not stop the pipeline.
TEST_F(ExecutorTest, AStepThatCanNeverFitIsRefusedWhileTheRestRuns) {
  Graph g = graph(R"(
[[step]]
name = "big"
run = "x"
cores = 8
outputs = ["o"]

[[step]]
name = "after"
inputs = { x = "@big/o" }
run = "x"

[[step]]
name = "other"
run = "y"
)");
  place::PoolNode node{"n0", {0, 1}, {}, std::nullopt, "", {}};
  place::Pool pool({node});
  auto r = run_graph(g, store_, pool, env_, o_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(step(*r, "big").state, StepState::kRefused);
  EXPECT_NE(step(*r, "big").reason.find("can never run here"), std::string::npos)
      << step(*r, "big").reason;
  EXPECT_EQ(step(*r, "after").state, StepState::kSkipped);
  EXPECT_EQ(step(*r, "after").reason, "not run: 'big' was refused");
  EXPECT_EQ(step(*r, "other").state, StepState::kExecuted);
  EXPECT_EQ(r->exit_code(), 1);
  ASSERT_EQ(runner_.started.size(), 1u);
  EXPECT_EQ(runner_.started[0], "other");
}

TEST_F(ExecutorTest, ARefusalByTheRunnerSkipsDependents) {
  Graph g = graph(kChainAndOne);
  runner_.outcomes["b"] = {StepState::kRefused, "--mpi pmix: this Slurm has no MPI plugin"};
  RunReport r = run(g);
  EXPECT_EQ(step(r, "b").state, StepState::kRefused);
  EXPECT_EQ(step(r, "c").reason, "not run: 'b' was refused");
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ExecutorTest, CachedStepsDoNotRun) {
  Graph g = graph(kChainAndOne);
  RunReport first = run(g);
  ASSERT_EQ(first.count(StepState::kExecuted), 4);
  runner_.started.clear();
  RunReport second = run(g);
  EXPECT_TRUE(runner_.started.empty());
  EXPECT_EQ(second.count(StepState::kCached), 4);
  EXPECT_EQ(step(second, "a").reason, kCachedReason);
  // Their results were put in place.
  EXPECT_TRUE(fs::exists(dir_ / "results" / "c" / "o"));
}

TEST_F(ExecutorTest, EqualKeysInOneRunAreComputedOnce) {
  // Six steps whose command does not use their key: one computation, five takers.
  Graph g = graph(R"(
[[step]]
name = "e-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6"] }
run = "same for all"
outputs = ["o"]
[[step]]
name = "after"
run = "y"
inputs = { i = "@e-6/o" }
outputs = ["o"]
)");
  RunReport r = run(g);
  EXPECT_EQ(std::count_if(runner_.started.begin(), runner_.started.end(),
                          [](const std::string& n) { return n.rfind("e-", 0) == 0; }),
            1);
  EXPECT_EQ(r.count(StepState::kExecuted), 2);  // one e-*, and after
  EXPECT_EQ(r.count(StepState::kCached), 5);
  EXPECT_TRUE(r.divergences.empty());
  const std::string& first = runner_.started[0];
  for (const auto& s : r.steps) {
    if (s.name == first || s.name == "after") continue;
    EXPECT_EQ(s.reason,
              fmt::format("cached: the same key as '{}', computed once in this run", first));
    EXPECT_EQ(s.outputs.at("o").object, step(r, first).outputs.at("o").object);
    EXPECT_TRUE(fs::exists(dir_ / "results" / s.name / "o")) << s.name;
  }
  EXPECT_EQ(step(r, "after").state, StepState::kExecuted);
}

TEST_F(ExecutorTest, EqualKeysRunForThemselvesWhenTheFirstFails) {
  Graph g = graph(R"(
[[step]]
name = "e-{i}"
foreach = { i = ["1", "2"] }
run = "same"
outputs = ["o"]
)");
  runner_.outcomes["e-1"] = {StepState::kFailed, "flaky"};
  RunReport r = run(g, 1);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"e-1", "e-2"}));
  EXPECT_EQ(states(r),
            (std::map<std::string, std::string>{{"e-1", "failed"}, {"e-2", "executed"}}));
}

TEST_F(ExecutorTest, EqualKeysInADryRunAreOneWouldRun) {
  Graph g = graph(R"(
[[step]]
name = "e-{i}"
foreach = { i = ["1", "2"] }
run = "same"
outputs = ["o"]
)");
  o_.dry_run = true;
  RunReport r = run(g);
  EXPECT_TRUE(runner_.started.empty());
  // Counted as would-run, not as skipped, and the reason does not say its state again.
  EXPECT_EQ(step(r, "e-1").state, StepState::kWouldRun);
  EXPECT_EQ(step(r, "e-2").state, StepState::kWouldRun);
  EXPECT_EQ(step(r, "e-2").reason, "the same key as 'e-1', computed once");
  EXPECT_EQ(r.count(StepState::kSkipped), 0);
}

TEST_F(ExecutorTest, CancelEndsRunningStepsAndStartsNoMore) {
  Graph g = graph(R"(
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3"] }
run = "run {i}"
outputs = ["o"]
)");
  runner_.outcomes["s-1"].hold = true;
  // The run idles while s-1 runs: Ctrl-C arrives then.
  on_idle = [this] { ASSERT_EQ(::write(cancel_[1], "x", 1), 1); };
  RunReport r = run(g, 1);
  EXPECT_TRUE(runner_.cancelled);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"s-1"}));
  EXPECT_EQ(states(r), (std::map<std::string, std::string>{
                           {"s-1", "cancelled"}, {"s-2", "cancelled"}, {"s-3", "cancelled"}}));
  EXPECT_EQ(step(r, "s-2").reason, "not run: the run was interrupted");
  EXPECT_EQ(r.exit_code(), 130);
}

// -j 2 on four cores: never more than two steps at once, and every step still runs.
TEST_F(ExecutorTest, JobsCapsTheStepsInFlight) {
  Graph g = graph(R"(
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4"] }
run = "run {i}"
outputs = ["o"]
)");
  for (const char* n : {"s-1", "s-2", "s-3", "s-4"}) runner_.outcomes[n].hold = true;
  on_idle = [this] {
    for (const char* n : {"s-1", "s-2", "s-3", "s-4"}) {
      if (!runner_.key_of(n).empty()) return runner_.release(n);
    }
  };
  o_.jobs = 2;
  RunReport r = run(g, 4);
  EXPECT_EQ(runner_.max_running, 2);
  EXPECT_EQ(r.count(StepState::kExecuted), 4);
}

TEST_F(ExecutorTest, PlacementsAreFreedWhenProcessesEndSoOthersStart) {
  // Two cores, three one-core steps: the third starts once one of the first two ends.
  Graph g = graph(R"(
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3"] }
run = "run {i}"
outputs = ["o"]
)");
  runner_.outcomes["s-1"].hold = true;
  runner_.outcomes["s-2"].hold = true;
  // Idle with both running: s-2 ends; idle again with s-1 alone: it ends too.
  on_idle = [this] {
    if (runner_.running() == 2) {
      runner_.release("s-2");
    } else if (runner_.running() == 1) {
      runner_.release("s-1");
    }
  };
  RunReport r = run(g, 2);
  EXPECT_EQ(runner_.max_running, 2);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"s-1", "s-2", "s-3"}));
  EXPECT_EQ(r.count(StepState::kExecuted), 3);
}

// cores = 0: four such steps all run at once on a pool of one core, beside a step that
// holds the core, unbound (no cores in their record) and saying so; -j still caps them.
TEST_F(ExecutorTest, StepsThatNeedNoCoreRunBeyondTheCoresButWithinJobs) {
  // `what` makes the keys of each run its own: nothing is cached from the one before.
  auto pipeline = [this](const std::string& what) {
    return graph(fmt::format(R"(
[[step]]
name = "io-{{i}}"
foreach = {{ i = ["1", "2", "3", "4"] }}
run = "fetch {{i}} {}"
outputs = ["o"]
cores = 0
[[step]]
name = "crunch"
run = "crunch {}"
outputs = ["o"]
)",
                             what, what));
  };
  const std::vector<std::string> all = {"io-1", "io-2", "io-3", "io-4", "crunch"};
  for (const auto& n : all) runner_.outcomes[n].hold = true;
  size_t most_running = 0;
  o_.progress = [&most_running](const Progress& p) {
    most_running = std::max(most_running, p.running);
  };
  on_idle = [this, &all] {
    for (const auto& n : all) {
      if (!runner_.key_of(n).empty()) return runner_.release(n);
    }
  };
  RunReport r = run(pipeline("first"), 1);
  EXPECT_EQ(runner_.max_running, 5);
  EXPECT_EQ(most_running, 5u);  // what runs, past the one core: none of them waits for it
  EXPECT_EQ(r.count(StepState::kExecuted), 5);
  EXPECT_EQ(step(r, "io-1").cores, "");
  EXPECT_EQ(step(r, "crunch").cores, "0");
  o_.jobs = 2;
  runner_.max_running = 0;
  r = run(pipeline("capped"), 1);
  EXPECT_EQ(runner_.max_running, 2);
  EXPECT_EQ(r.count(StepState::kExecuted), 5);
}

// The progress line's "running" counts steps whose processes run. A step whose
// processes ended gives its cores to the next step while it still stores its outputs:
// on two cores four such steps are in flight at once, and never more than two run.
TEST_F(ExecutorTest, ProgressCountsRunningProcessesNotStepsBeingPublished) {
  // A runner whose steps' processes end at once and whose steps stay in flight,
  // publishing, until the test lets them finish.
  class PublishingRunner final : public StepRunner {
   public:
    void start(StepTask task, Events events) override {
      events.exited();
      held.push_back({std::move(task), std::move(events)});
    }
    void cancel() override { finish_all(); }
    void join() override {}
    void finish_all() {
      for (auto& [task, events] : held) {
        StepResult d;
        d.step = task.step;
        d.record = task.record;
        d.record.state = StepState::kFailed;
        d.record.reason = "published nothing";
        events.done(std::move(d));
      }
      held.clear();
    }
    std::vector<std::pair<StepTask, Events>> held;
  } publishing;
  Graph g = graph(R"(
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4"] }
run = "run {i}"
outputs = ["o"]
)");
  o_.runner = &publishing;
  size_t most_running = 0;
  o_.progress = [&most_running](const Progress& p) {
    most_running = std::max(most_running, p.running);
  };
  size_t most_held = 0;
  on_idle = [&] {
    most_held = std::max(most_held, publishing.held.size());
    if (publishing.held.size() == 4) publishing.finish_all();
  };
  RunReport r = run(g, 2);
  EXPECT_EQ(most_held, 4u);     // all four in flight on two cores
  EXPECT_EQ(most_running, 2u);  // never more running than the cores
  EXPECT_EQ(r.count(StepState::kFailed), 4);
}

// Worker mode: a step another worker holds is deferred, and re-armed after a backoff
// on the clock (no sleep): by then the other worker has published it, so it is cached.
TEST_F(ExecutorTest, AStepClaimedElsewhereIsDeferredThenFoundCached) {
  Graph g = graph(R"(
[[step]]
name = "mine"
run = "x"
outputs = ["o"]
[[step]]
name = "theirs"
run = "y"
outputs = ["o"]
)");
  Leases ours(store_, "w1", Leases::new_token(), clock_, std::chrono::minutes(10));
  Leases other(store_, "w2", Leases::new_token(), clock_, std::chrono::minutes(10));
  o_.leases = &ours;
  o_.worker = "w1";
  o_.backoff_min = std::chrono::milliseconds(1000);
  // The key "theirs" will have: learnt from a dry run of the same graph.
  RunOptions dry = o_;
  dry.dry_run = true;
  dry.leases = nullptr;
  place::PoolNode node{"n0", {0, 1}, {}, std::nullopt, "", {}};
  place::Pool pool({node});
  auto planned = run_graph(g, store_, pool, env_, dry);
  ASSERT_TRUE(planned.ok());
  std::string key = step(*planned, "theirs").key;
  auto held = other.acquire(key);
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(held->outcome, Leases::Outcome::kAcquired);
  // When this worker has nothing left but the deferred step, the other finishes it.
  bool published = false;
  on_idle = [&] {
    if (published) return;
    published = true;
    auto obj = store_.put_object("their output");
    ASSERT_TRUE(obj.ok());
    std::string row = fmt::format(
        R"({{"version":1,"key":"{}","step":"theirs","outputs":{{"o":{{"object":"{}","form":"bytes","canonical":"{}"}}}},"provenance":{{"host":"n9","worker":"w2","cores":"0"}}}})",
        key, *obj, *obj);
    ASSERT_TRUE(store_.put_row(store::row_address(kStepsRow, key), row).ok());
  };
  RunReport r = run(g);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"mine"}));
  EXPECT_EQ(step(r, "theirs").state, StepState::kCached);
  EXPECT_EQ(step(r, "theirs").computed_by, "w2");
  EXPECT_EQ(r.leases.held, 1);
  EXPECT_EQ(r.leases.rearms, 1);
  EXPECT_EQ(waited_ms_, 1000) << "one backoff, on the fake clock";
}

// ---- Retries, time limits and targets ------------------------------------------------

constexpr const char* kFlakyThenAfter = R"(
[[step]]
name = "flaky"
run = "x"
outputs = ["o"]
retries = 2
[[step]]
name = "after"
run = "y"
inputs = { i = "@flaky/o" }
outputs = ["o"]
)";

TEST_F(ExecutorTest, AFailedStepWithRetriesRunsAgainAfterABackoff) {
  Graph g = graph(kFlakyThenAfter);
  runner_.attempts["flaky"] = {{StepState::kFailed, "exited with status 1"},
                               {StepState::kFailed, "exited with status 1"}};
  RunReport r = run(g);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"flaky", "flaky", "flaky", "after"}));
  EXPECT_EQ(runner_.attempt_numbers, (std::vector<int>{1, 2, 3, 1}));
  EXPECT_EQ(step(r, "flaky").state, StepState::kExecuted);
  EXPECT_EQ(step(r, "flaky").attempts, 3);
  EXPECT_EQ(step(r, "after").state, StepState::kExecuted);
  EXPECT_EQ(waited_ms_, 1000 + 2000) << "1 s, then 2 s, on the fake clock";
  EXPECT_EQ(r.exit_code(), 0);
}

// A step lost with its node's agent (spec 08 §5) is not its own failure: it runs again
// at once on a node still there, without using up a retry, and the node leaves the pool.
TEST_F(ExecutorTest, AStepLostWithItsNodeRunsAgainElsewhereAndTheNodeLeavesThePool) {
  Graph g = graph(R"(
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3"] }
run = "x {i}"
outputs = ["o"]
)");
  runner_.attempts["s-1"] = {{StepState::kFailed, "the agent on 'a' was lost", false, false, 0, "a"}};
  place::PoolNode a, b;
  a.name = "a";
  a.cores = {0};
  b.name = "b";
  b.cores = {0};
  place::Pool pool({a, b});
  auto r = run_graph(g, store_, pool, env_, o_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_code(), 0);
  EXPECT_EQ(step(*r, "s-1").state, StepState::kExecuted);
  EXPECT_EQ(step(*r, "s-1").node, "b");
  EXPECT_EQ(step(*r, "s-1").attempts, 1) << "a lost attempt is not one of its own";
  EXPECT_EQ(waited_ms_, 0) << "no backoff";
  // Started four times: s-1 on a (lost), then everything on b alone.
  ASSERT_EQ(runner_.nodes.size(), 4u);
  EXPECT_EQ(runner_.nodes[0], "a");
  for (size_t k = 1; k < runner_.nodes.size(); ++k) EXPECT_EQ(runner_.nodes[k], "b") << k;
}

TEST_F(ExecutorTest, AStepLostWhileTheRunIsCancelledEndsCancelled) {
  Graph g = graph(kFlakyThenAfter);
  runner_.outcomes["flaky"] = {StepState::kFailed, "the agent on 'n0' was lost", true, false, 0, "n0"};
  on_idle = [this] {
    ::write(cancel_[1], "x", 1);
    on_idle = nullptr;
  };
  RunReport r = run(g);
  EXPECT_EQ(step(r, "flaky").state, StepState::kCancelled);
  EXPECT_EQ(runner_.started.size(), 1u);
}

TEST_F(ExecutorTest, AStepOutOfRetriesFailsWithItsLastReason) {
  Graph g = graph(kFlakyThenAfter);
  runner_.outcomes["flaky"] = {StepState::kFailed, "exited with status 7"};
  o_.retry_min = std::chrono::milliseconds(500);
  o_.retry_max = std::chrono::milliseconds(800);
  RunReport r = run(g);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"flaky", "flaky", "flaky"}));
  EXPECT_EQ(step(r, "flaky").state, StepState::kFailed);
  EXPECT_EQ(step(r, "flaky").reason, "exited with status 7 (attempt 3 of 3)");
  EXPECT_EQ(step(r, "after").state, StepState::kSkipped);
  EXPECT_EQ(waited_ms_, 500 + 800) << "doubling, held to retry_max";
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(ExecutorTest, ATimedOutStepIsRetriedAndReportedTimedOutWhenItKeepsTimingOut) {
  Graph g = graph(kFlakyThenAfter);
  runner_.outcomes["flaky"] = {StepState::kFailed, "timed out after 30m", false, true};
  RunReport r = run(g);
  EXPECT_EQ(runner_.started.size(), 3u);
  EXPECT_EQ(step(r, "flaky").state, StepState::kFailed);
  EXPECT_TRUE(step(r, "flaky").timed_out);
  EXPECT_EQ(step(r, "flaky").reason, "timed out after 30m (attempt 3 of 3)");
}

TEST_F(ExecutorTest, ARefusedOrCancelledStepIsNotRetried) {
  Graph g = graph(kFlakyThenAfter);
  runner_.outcomes["flaky"] = {StepState::kRefused, "the launcher cannot place it"};
  RunReport r = run(g);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"flaky"}));
  EXPECT_EQ(step(r, "flaky").state, StepState::kRefused);
}

TEST_F(ExecutorTest, ACancelDuringABackoffEndsTheStepAsItsLastAttempt) {
  Graph g = graph(kFlakyThenAfter);
  runner_.outcomes["flaky"] = {StepState::kFailed, "exited with status 1"};
  on_idle = [this] { ASSERT_EQ(::write(cancel_[1], "x", 1), 1); };
  RunReport r = run(g);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"flaky"}));
  EXPECT_EQ(step(r, "flaky").state, StepState::kFailed);
  EXPECT_EQ(step(r, "after").state, StepState::kSkipped);
  EXPECT_EQ(waited_ms_, 0);
}

TEST_F(ExecutorTest, NeitherRetriesNorATimeLimitEntersTheKey) {
  const char* plain = "[[step]]\nname = 's'\nrun = 'x'\noutputs = ['o']\n";
  std::string limited = std::string(plain) + "retries = 3\ntimeout = '10m'\n";
  o_.dry_run = true;
  std::string a = step(run(graph(plain)), "s").key;
  std::string b = step(run(graph(limited)), "s").key;
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_F(ExecutorTest, ATargetedGraphRunsItsTargetsAndWhatTheyNeedOnly) {
  auto g = select_targets(graph(kChainAndOne), {"b"});
  ASSERT_TRUE(g.ok());
  RunReport r = run(*g);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(states(r), (std::map<std::string, std::string>{{"a", "executed"}, {"b", "executed"}}));
}

// ---- Lease extension and the ETA ---------------------------------------------------

TEST_F(ExecutorTest, AStepLongerThanItsLeaseKeepsItsClaimByExtendingIt) {
  Graph g = graph("[[step]]\nname = 'long'\nrun = 'x'\noutputs = ['o']\n");
  Leases ours(store_, "w1", Leases::new_token(), clock_, std::chrono::seconds(10));
  Leases other(store_, "w2", Leases::new_token(), clock_, std::chrono::seconds(10));
  o_.leases = &ours;
  o_.worker = "w1";
  runner_.outcomes["long"].hold = true;
  std::string key;
  int held = 0;
  on_idle = [&] {
    if (key.empty()) key = runner_.key_of("long");
    // Three leases long: another worker finds it held throughout, and the step ends.
    if (waited_ms_ < 30'000) {
      auto c = other.acquire(key);
      ASSERT_TRUE(c.ok());
      held += c->outcome == Leases::Outcome::kHeld;
      return;
    }
    runner_.release("long");
  };
  RunReport r = run(g);
  EXPECT_EQ(step(r, "long").state, StepState::kExecuted);
  EXPECT_EQ(held, 6) << "asked at 0, 5, 10, ... 25 s: long past the first deadline";
  EXPECT_EQ(r.leases.extended, 6) << "every half lease";
  EXPECT_EQ(r.leases.lost, 0);
}

TEST_F(ExecutorTest, TheEtaCountsOutStepsThatWillBeCachedWithoutRunning) {
  // z and x-1 run at once; x-2 has x-1's key and waits for it. When z ends after 10 s,
  // one step is left to run (x-1, running): not two.
  Graph g = graph(R"(
[[step]]
name = "z"
run = "z"
outputs = ["o"]
[[step]]
name = "x-{i}"
foreach = { i = ["1", "2"] }
run = "same"
outputs = ["o"]
)");
  runner_.outcomes["z"] = {StepState::kExecuted, "", true, false, 10};
  runner_.outcomes["x-1"] = {StepState::kExecuted, "", true, false, 20};
  std::vector<Progress> seen;
  o_.progress = [&](const Progress& p) { seen.push_back(p); };
  int idle = 0;
  on_idle = [&] { runner_.release(idle++ == 0 ? "z" : "x-1"); };
  RunReport r = run(g);
  EXPECT_EQ(step(r, "x-2").state, StepState::kCached);
  auto first = std::find_if(seen.begin(), seen.end(), [](const Progress& p) { return p.executed == 1; });
  ASSERT_NE(first, seen.end());
  EXPECT_DOUBLE_EQ(first->eta_s, 10.0 * 1 / 2) << "mean 10 s, one step left, two at once";
}

// Reuse from a settled record (spec 04 §7.1): a first run records what each step
// rested on, as the session does; a second run given that record, and which of its
// facts still hold, finishes every step whose facts hold from its entry.
class ExecutorReuseTest : public ExecutorTest {
 protected:
  class NoTools : public place::VersionProbe {
   public:
    Result<std::string> run(const std::vector<std::string>& argv) override {
      return fail(Errc::kNotFound, argv.at(0) + ": no tools here");
    }
  };

  void SetUp() override {
    ExecutorTest::SetUp();
    auto ix = Index::open((dir_ / "index.sqlite").string());
    ASSERT_TRUE(ix.ok()) << ix.error().message();
    index_ = std::move(*ix);
    o_.index = index_.get();
    o_.record_settled = true;
  }

  // Runs `g` and keeps its record and steps as the session would: the steps a rerun
  // reports, each step's entry located in them.
  void record(const Graph& g) {
    RunReport r = run(g);
    ASSERT_TRUE(r.settled.has_value()) << "the first run did not settle";
    EntrySpans spans, rerun;
    std::string steps = report_steps_json(r, &spans);
    steps_ = std::make_shared<std::string>(settled_steps_json(r, steps, spans, &rerun));
    rec_ = *r.settled;
    ASSERT_EQ(rec_.entries.size(), rerun.size());
    for (size_t i = 0; i < rerun.size(); ++i) {
      rec_.entries[i].offset = rerun[i].first;
      rec_.entries[i].length = rerun[i].second;
    }
    rec_.steps = r.steps.size();
    rec_.steps_bytes = steps_->size();
    rec_.object_bytes = steps_->size();
    // Shared as the session shares a mapped file, but left writable here: a test may
    // change an entry in place (the same length) after the entries were found.
    entries_ = recorded_entries(
        rec_, files::SharedBytes(new std::string_view(*steps_),
                                 [keep = steps_](const std::string_view* v) { delete v; }));
    ASSERT_NE(entries_, nullptr);
    check_ = check_settled(rec_, {place::PoolNode{"n0", {0, 1}, {}, std::nullopt, "", {}}}, store_, probe_);
    ASSERT_EQ(check_.difference, std::nullopt);
  }
  // The next run reuses from the record.
  RunReport rerun(const Graph& g, bool verify_fingerprints = false,
                  std::vector<char> same_tables = {}) {
    o_.reuse = SettledReuse{&rec_, &check_, entries_, verify_fingerprints, std::move(same_tables)};
    runner_.started.clear();
    return run(g);
  }
  const SettledStep& entry(const std::string& name) {
    for (const auto& e : rec_.entries) {
      if (e.name == name) return e;
    }
    ADD_FAILURE() << "no entry for " << name;
    return rec_.entries.at(0);
  }

  std::unique_ptr<Index> index_;
  NoTools probe_;
  Settled rec_;
  SettledCheck check_;
  std::shared_ptr<std::string> steps_;
  std::shared_ptr<const RecordedEntries> entries_;  // views into steps_
};

TEST_F(ExecutorReuseTest, EveryStepWhoseFactsHoldIsItsEntryNotKeyedLookedUpOrRun) {
  Graph g = graph(kChainAndOne);
  record(g);
  EXPECT_EQ(runner_.started.size(), 4u);
  // Every step rests on its output's object; the record knows each step's definition.
  for (const auto& e : rec_.entries) {
    EXPECT_EQ(e.objects.size(), 1u) << e.name;
    EXPECT_EQ(e.fingerprint, step_fingerprint(g.steps[*g.find(e.name)], g, {})) << e.name;
  }
  RunReport r = rerun(g);
  EXPECT_TRUE(runner_.started.empty());
  EXPECT_EQ(r.count(StepState::kCached), 4);
  for (const auto& s : r.steps) {
    EXPECT_FALSE(s.recorded.empty()) << s.name;
    EXPECT_TRUE(s.key.empty()) << s.name << " was keyed";
  }
  // Its report is the recorded steps, byte for byte; and it leaves the same record.
  EXPECT_EQ(report_steps_json(r), *steps_);
  ASSERT_TRUE(r.settled.has_value());
  EXPECT_EQ(r.settled->entries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.settled->entries[i].fingerprint, rec_.entries[i].fingerprint);
    EXPECT_EQ(r.settled->objects[r.settled->entries[i].objects.at(0)],
              rec_.objects[rec_.entries[i].objects.at(0)]);
  }
}

TEST_F(ExecutorReuseTest, AStepWhoseFactChangedIsKeyedAndSoIsWhatReadsIt) {
  Graph g = graph(kChainAndOne);
  record(g);
  // b's object is gone (as the check would find): b is keyed and looked up, and c,
  // which reads b, with it; a and d are their entries. b's key is computed from a's
  // output as a's entry records it.
  check_.object_ok[entry("b").objects.at(0)] = 0;
  RunReport r = rerun(g);
  EXPECT_FALSE(step(r, "a").recorded.empty());
  EXPECT_FALSE(step(r, "d").recorded.empty());
  EXPECT_TRUE(step(r, "b").recorded.empty());
  EXPECT_TRUE(step(r, "c").recorded.empty());
  EXPECT_EQ(step(r, "b").state, StepState::kCached) << "its row is in the store";
  EXPECT_EQ(step(r, "c").state, StepState::kCached);
  EXPECT_EQ(step(r, "b").key, std::string(steps_->substr(entry("b").offset, entry("b").length))
                                  .substr(std::string(R"({"name":"b","state":"cached","key":")").size(), 64));
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(ExecutorReuseTest, AnEditedPipelineReusesTheStepsWhoseFingerprintIsTheSame) {
  record(graph(kChainAndOne));
  // c's command changed: c runs again; a, b and d, defined as before, are reused.
  std::string edited = kChainAndOne;
  edited.replace(edited.find("run = \"z\""), 9, "run = \"Z\"");
  Graph g = graph(edited);
  RunReport r = rerun(g, true);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"c"}));
  EXPECT_EQ(step(r, "c").state, StepState::kExecuted);
  for (const char* n : {"a", "b", "d"}) EXPECT_FALSE(step(r, n).recorded.empty()) << n;
  // Without the check by fingerprint, names alone would have reused c's old entry.
  ASSERT_TRUE(r.settled.has_value());
  EXPECT_NE(r.settled->entries[*g.find("c")].fingerprint, entry("c").fingerprint);
}

// A table whose bytes are the record's (the session compares them) keeps its steps'
// recorded fingerprints without computing them; the others are verified.
TEST_F(ExecutorReuseTest, ATableAsRecordedIsNotFingerprintedAgain) {
  Graph before = graph(kChainAndOne);
  record(before);
  for (const auto& e : rec_.entries) {
    EXPECT_EQ(e.table, before.steps[*before.find(e.name)].spec) << e.name;
  }
  std::string edited = kChainAndOne;
  edited.replace(edited.find("run = \"z\""), 9, "run = \"Z\"");
  Graph g = graph(edited);
  const size_t c = g.steps[*g.find("c")].spec;
  std::vector<char> same(g.steps.size(), 1);
  same[c] = 0;
  RunReport r = rerun(g, true, same);
  EXPECT_EQ(runner_.started, (std::vector<std::string>{"c"}));
  ASSERT_TRUE(r.settled.has_value());
  for (const char* n : {"a", "b", "d"}) {
    EXPECT_EQ(r.settled->entries[*g.find(n)].fingerprint, entry(n).fingerprint) << n;
  }
  // Taken at its word: told c's table is the record's too, c is its old entry.
  record(before);
  RunReport lied = rerun(g, true, std::vector<char>(g.steps.size(), 1));
  EXPECT_TRUE(runner_.started.empty());
  EXPECT_FALSE(step(lied, "c").recorded.empty());
}

TEST_F(ExecutorReuseTest, AnEntryThatDoesNotSayItsOutputsFailsWhatMustReadThem) {
  Graph g = graph(kChainAndOne);
  record(g);
  // a's entry, the right length but not a step's record; b must be keyed from a's
  // outputs.
  const SettledStep& a = entry("a");
  steps_->replace(a.offset, a.length, "{" + std::string(a.length - 2, ' ') + "}");
  check_.object_ok[entry("b").objects.at(0)] = 0;
  RunReport r = rerun(g);
  EXPECT_EQ(step(r, "b").state, StepState::kFailed);
  EXPECT_NE(step(r, "b").reason.find("does not say its outputs"), std::string::npos)
      << step(r, "b").reason;
  EXPECT_EQ(step(r, "c").state, StepState::kSkipped);
  EXPECT_FALSE(r.settled.has_value()) << "a run with a failure leaves no record";
}


TEST_F(ExecutorReuseTest, AnInputHashedInTheTickItChangedIsRecordedWithItsHash) {
  std::string in = (dir_ / "in.txt").string();
  { std::ofstream(in) << "bytes\n"; }
  Graph g = graph(fmt::format(R"(
[[step]]
name = "r"
run = "x"
inputs = {{ src = "{}" }}
outputs = ["o"]
)",
                              in));
  auto st = FileStamp::of(in);
  ASSERT_TRUE(st.ok());
  // The run's clock reads just after the file changed: its stamp is racy.
  clock_.advance(std::chrono::nanoseconds(st->ctime_ns - wall_ns(clock_.wall()) + 1'000'000));
  RunReport first = run(g);
  ASSERT_TRUE(first.settled.has_value());
  ASSERT_EQ(first.settled->files.size(), 1u);
  EXPECT_EQ(first.settled->files[0].racy_hash, "sha256:" + sha256_hex("bytes\n"));
  EXPECT_EQ(index_->file_hash(in, *st), std::nullopt) << "the index does not trust it either";
  // Later, the same stamp is proof: hashed once more, then recorded plainly.
  clock_.advance(std::chrono::nanoseconds(kRacyWindowNs));
  RunReport second = run(g);
  ASSERT_TRUE(second.settled.has_value());
  EXPECT_EQ(second.settled->files[0].racy_hash, "");
  EXPECT_EQ(index_->file_hash(in, *st), "sha256:" + sha256_hex("bytes\n"));
}

}  // namespace
}  // namespace berth::pipeline
