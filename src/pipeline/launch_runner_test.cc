// The real step runner, stage by stage, with real trivial processes started through a
// fake spawner (fake_spawner_for_test.h) that sees every request and can refuse one: a
// step is staged in a directory of its own, launched, its inputs stamped again, its
// outputs stored and its row published to a MemoryStore (spec 04 §7, steps 3–5). The
// publishing functions (step_publish.h) are tested on their own at the end.
#include "pipeline/launch_runner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/fake_spawner_for_test.h"
#include "pipeline/graph.h"
#include "pipeline/pipeline_file.h"
#include "pipeline/step_cache.h"
#include "pipeline/step_publish.h"
#include "store/memory_store.h"
#include "util/fake_clock_for_test.h"
#include "util/files.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// What a step told the executor, through its Events.
struct Told {
  int exited = 0;
  int known = 0;
  std::optional<StepResult> done;
};

class LaunchRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("berth-launch-runner-test.{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "results");
    fs::create_directories(dir_ / "staging");
    write(dir_ / "data.txt", "some data\n");
    env_.set("PATH", "/usr/bin:/bin");
    o_.host = "n0";
    o_.clock = &clock_;
    o_.spawner = &spawner_;
    o_.engine_version = "test";
    o_.output = [this](const std::string& step, std::string_view text) {
      outputs_.push_back(step + ": " + std::string(text));
    };
    cache_.emplace(store_, store_, nullptr, (dir_ / "results").string());
    staging_.emplace((dir_ / "staging").string());
    start_.cache = &*cache_;
  }
  void TearDown() override {
    staging_.reset();  // it removes the directories it kept first
    fs::remove_all(dir_);
  }

  static void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }

  // Parses and expands `toml`, a pipeline file in the test's directory.
  void load(const std::string& toml) {
    auto f = parse_pipeline(toml, (dir_ / "p.toml").string());
    ASSERT_TRUE(f.ok()) << f.error().message();
    auto g = expand(*f, [](const std::string& p) { return fs::exists(p); });
    ASSERT_TRUE(g.ok()) << g.error().message();
    g_ = std::move(*g);
  }

  // Step `i` of the graph as the executor hands it over, placed on `node`, core 0, with
  // its file inputs stamped now.
  StepTask task(size_t i, const std::string& node = "n0") {
    StepTask t;
    t.step = i;
    t.spec = &g_.steps[i];
    t.key = "key-" + g_.steps[i].name;
    t.placement.nodes = {node};
    t.placement.cores = {{0}};
    t.record.name = g_.steps[i].name;
    t.record.key = t.key;
    t.record.node = node;
    t.record.cores = "0";
    for (const auto& [name, input] : g_.steps[i].inputs) {
      for (const InputItem& item : input.items) {
        if (item.kind != InputItem::Kind::kFile) continue;
        auto stamp = FileStamp::of(item.path);
        EXPECT_TRUE(stamp.ok());
        t.stamps.push_back(stamp.ok() ? *stamp : FileStamp{});
      }
    }
    return t;
  }

  // Runs `t` to its end and says what it told.
  Told run(StepTask t) {
    Told told;
    {
      LaunchStepRunner runner(g_, *staging_, env_, o_);
      runner.begin(start_);
      StepRunner::Events ev;
      ev.exited = [&told] { ++told.exited; };
      ev.known = [&told](const std::map<std::string, StepRecord::Output>&) { ++told.known; };
      ev.done = [&told](StepResult d) { told.done = std::move(d); };
      runner.start(std::move(t), std::move(ev));
      runner.join();
    }
    EXPECT_TRUE(told.done.has_value()) << "done was never called";
    if (!told.done) told.done = StepResult{};
    return told;
  }

  std::optional<std::string> row(const std::string& key) {
    auto got = store_.get_row(store::row_address(kStepsRow, key));
    EXPECT_TRUE(got.ok());
    return got.ok() ? *got : std::nullopt;
  }
  std::string object(const std::string& name) {
    auto got = store_.get_object(name);
    EXPECT_TRUE(got.ok());
    return got.ok() ? got->bytes : "";
  }

  fs::path dir_;
  Graph g_;
  store::MemoryStore store_;
  std::optional<StepCache> cache_;  // results under dir_/results
  std::optional<Staging> staging_;  // staging directories under dir_/staging
  Env env_;
  FakeClock clock_;
  FakeSpawner spawner_;
  LaunchRunnerOptions o_;
  RunStart start_;  // its cache set in SetUp
  std::vector<std::string> outputs_;  // what reached the output callback
};

constexpr const char* kCopy = R"(
[[step]]
name = "copy"
run = "cat {in.d} > {out.o}"
inputs = { d = "data.txt" }
outputs = ["o"]
)";

TEST_F(LaunchRunnerTest, ItsOutputsAreStoredAndItsRowPublished) {
  load(kCopy);
  Told told = run(task(0));
  const StepResult& d = *told.done;
  ASSERT_EQ(d.record.state, StepState::kExecuted) << d.record.reason;
  EXPECT_EQ(d.record.exit_code, 0);
  ASSERT_EQ(d.record.outputs.count("o"), 1u);
  const StepRecord::Output& o = d.record.outputs.at("o");
  EXPECT_EQ(object(o.object), "some data\n");
  EXPECT_EQ(o.form, "bytes");
  EXPECT_TRUE(d.row_ours);
  EXPECT_EQ(told.known, 1);  // its dependents were told before the row
  auto text = row("key-copy");
  ASSERT_TRUE(text.has_value());
  json r = json::parse(*text);
  EXPECT_EQ(r["key"], "key-copy");
  EXPECT_EQ(r["step"], "copy");
  EXPECT_EQ(r["outputs"]["o"]["object"], o.object);
  EXPECT_EQ(r["provenance"]["host"], "n0");
  EXPECT_EQ(r["provenance"]["inputs"]["d"][0]["file"], "data.txt");
  EXPECT_EQ(d.record.computed_by, "n0");
  // Its result is in place, and its staging directory was emptied for the next step.
  auto result = files::read_file((dir_ / "results/copy/o").string(), 1 << 20);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "some data\n");
  // It ran in its staging directory, through the spawner it was handed.
  auto seen = spawner_.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(fs::path(seen[0].cwd).parent_path(), dir_ / "staging");
  EXPECT_FALSE(fs::exists(fs::path(seen[0].cwd) / "out" / "o"));
}

// Workers claim keys: another worker may publish the same key first, so a step's
// dependents wait for its row (spec 06), and the run said so when it began.
TEST_F(LaunchRunnerTest, UnderLeasesItsDependentsAreNotToldBeforeItsRow) {
  load(kCopy);
  start_.leases = true;
  Told told = run(task(0));
  ASSERT_EQ(told.done->record.state, StepState::kExecuted) << told.done->record.reason;
  EXPECT_EQ(told.known, 0);
  EXPECT_TRUE(row("key-copy").has_value());
}

TEST_F(LaunchRunnerTest, AStepWhoseSpawnerCannotStartItPublishesNothingAndSaysWhy) {
  load(kCopy);
  spawner_.refuse(Error(Errc::kNotFound, "rank 0: sh: no such program on n0"));
  Told told = run(task(0));
  const StepResult& d = *told.done;
  EXPECT_EQ(d.record.state, StepState::kFailed);
  EXPECT_EQ(d.record.reason, "rank 0: sh: no such program on n0");
  EXPECT_EQ(d.record.exit_code, 127);
  EXPECT_TRUE(d.record.outputs.empty());
  EXPECT_FALSE(row("key-copy").has_value());
  EXPECT_EQ(store_.row_count(), 0u);
  EXPECT_EQ(told.known, 0);
  EXPECT_EQ(told.exited, 1);
  EXPECT_FALSE(fs::exists(dir_ / "results/copy/o"));
}

TEST_F(LaunchRunnerTest, AnInputChangedWhileItRanFailsTheStep) {
  load(kCopy);
  // The user edits the input after its hash was taken, while the step runs.
  spawner_.before = [this](const launch::SpawnRequest&) {
    std::ofstream(dir_ / "data.txt", std::ios::app) << "more\n";
  };
  Told told = run(task(0));
  const StepResult& d = *told.done;
  EXPECT_EQ(d.record.state, StepState::kFailed);
  EXPECT_EQ(d.record.reason,
            "input data.txt changed while the step ran; its outputs are not stored, and it "
            "runs again next time");
  EXPECT_FALSE(row("key-copy").has_value());
  EXPECT_TRUE(d.record.outputs.empty());
  EXPECT_EQ(told.known, 0);
}

TEST_F(LaunchRunnerTest, AStepThatExitsWithAStatusFailsWithItAndPublishesNothing) {
  load(R"(
[[step]]
name = "bad"
run = "echo trying; exit 3"
outputs = ["o"]
)");
  Told told = run(task(0));
  const StepResult& d = *told.done;
  EXPECT_EQ(d.record.state, StepState::kFailed);
  EXPECT_EQ(d.record.exit_code, 3);
  EXPECT_EQ(d.record.log_tail, "trying");
  EXPECT_FALSE(row("key-bad").has_value());
  // Its output is kept all the same, named in its record.
  EXPECT_EQ(object(d.record.log), "trying\n");
  EXPECT_EQ(told.exited, 1);
}

TEST_F(LaunchRunnerTest, ADeclaredOutputNotWrittenFailsTheStep) {
  load(R"(
[[step]]
name = "lazy"
run = "true"
outputs = ["o"]
)");
  Told told = run(task(0));
  const StepResult& d = *told.done;
  EXPECT_EQ(d.record.state, StepState::kFailed);
  EXPECT_EQ(d.record.reason.rfind("declared output 'o' was not written (", 0), 0u)
      << d.record.reason;
  EXPECT_FALSE(row("key-lazy").has_value());
}

TEST_F(LaunchRunnerTest, ItsPlacementIsFreedOnceWhenItFailsBeforeLaunching) {
  load(kCopy);
  // Placed on another node, with no launcher to reach it: it never starts.
  Told told = run(task(0, "n9"));
  const StepResult& d = *told.done;
  EXPECT_EQ(d.record.state, StepState::kFailed);
  EXPECT_EQ(d.record.reason, "placed on 'n9', but no launcher reaches other nodes");
  EXPECT_EQ(told.exited, 1);
  EXPECT_TRUE(spawner_.seen().empty());
  EXPECT_FALSE(row("key-copy").has_value());
}

TEST_F(LaunchRunnerTest, ItsPlacementIsFreedOnceWhenItRan) {
  load(kCopy);
  EXPECT_EQ(run(task(0)).exited, 1);
  spawner_.refuse(Error(Errc::kNotFound, "cannot start"));
  EXPECT_EQ(run(task(0)).exited, 1);
}

TEST_F(LaunchRunnerTest, TheOutputCallbackGetsTheStepsOutputOnceWhole) {
  load(R"(
[[step]]
name = "talk"
run = "echo one; echo two; echo three > {out.o}"
outputs = ["o"]
)");
  Told told = run(task(0));
  ASSERT_EQ(told.done->record.state, StepState::kExecuted) << told.done->record.reason;
  EXPECT_EQ(outputs_, std::vector<std::string>{"talk: one\ntwo\n"});
  EXPECT_EQ(object(told.done->record.log), "one\ntwo\n");
}

TEST_F(LaunchRunnerTest, AStepThatSaysNothingReachesNoOutputCallback) {
  load(kCopy);
  Told told = run(task(0));
  ASSERT_EQ(told.done->record.state, StepState::kExecuted) << told.done->record.reason;
  EXPECT_TRUE(outputs_.empty());
}

TEST_F(LaunchRunnerTest, ARowAnotherComputationPublishedFirstIsAdopted) {
  load(kCopy);
  // Another worker published the key first, with an output it hashed otherwise.
  auto theirs = store_.put_object("their bytes\n");
  ASSERT_TRUE(theirs.ok());
  std::string other = fmt::format(
      R"({{"version":1,"key":"key-copy","step":"copy","outputs":{{"o":{{"object":"{}",)"
      R"("form":"bytes","canonical":"{}"}}}},"provenance":{{"worker":"w2","host":"n5"}}}})",
      *theirs, *theirs);
  ASSERT_TRUE(store_.put_row(store::row_address(kStepsRow, "key-copy"), other).ok());
  Told told = run(task(0));
  const StepResult& d = *told.done;
  ASSERT_EQ(d.record.state, StepState::kExecuted) << d.record.reason;
  EXPECT_FALSE(d.row_ours);
  EXPECT_EQ(d.record.outputs.at("o").object, *theirs);
  EXPECT_EQ(d.record.computed_by, "w2");
  ASSERT_EQ(d.divergences.size(), 1u);
  EXPECT_EQ(d.divergences[0].step, "copy");
  EXPECT_EQ(d.divergences[0].output, "o");
  EXPECT_EQ(d.divergences[0].theirs, *theirs);
  EXPECT_EQ(row("key-copy"), other);  // the winner's row stays in force
}

// The publishing stage on its own (step_publish.h).

TEST(StepPublish, ARowIsWrittenOnceAndAWinnersRowIsKept) {
  store::MemoryStore rows;
  const std::string address = store::row_address(kStepsRow, "k");
  auto first = put_step_row(rows, address, "{\"a\":1}");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created);
  auto second = put_step_row(rows, address, "{\"a\":2}");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->existing, "{\"a\":1}");
}

TEST(StepPublish, AWinnerThatMeantTheSameIsNoDivergence) {
  StepResult d;
  d.record.outputs["o"] = {"sha256:" + std::string(64, 'a'), "bytes", "h1"};
  std::string theirs = fmt::format(
      R"({{"outputs":{{"o":{{"object":"{}","canonical":"h1"}}}},"provenance":{{"host":"n3"}}}})",
      "sha256:" + std::string(64, 'b'));
  adopt_winner(theirs, "s", "k", d);
  EXPECT_TRUE(d.divergences.empty());
  EXPECT_EQ(d.record.outputs.at("o").object, "sha256:" + std::string(64, 'b'));
  EXPECT_EQ(d.record.computed_by, "n3");
}

TEST(StepPublish, AnUnreadableWinnerLeavesTheObjectsAndIsADivergence) {
  StepResult d;
  d.record.outputs["o"] = {"sha256:" + std::string(64, 'a'), "bytes", "h1"};
  d.record.computed_by = "me";
  adopt_winner("not json", "s", "k", d);
  ASSERT_EQ(d.divergences.size(), 1u);
  EXPECT_EQ(d.divergences[0].ours, "h1");
  EXPECT_EQ(d.divergences[0].theirs, "");
  EXPECT_EQ(d.record.outputs.at("o").object, "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(d.record.computed_by, "me");
}

TEST(StepPublish, ComputedByIsTheWorkerElseTheHost) {
  EXPECT_EQ(computed_by(json{{"host", "n1"}, {"worker", "w1"}}), "w1");
  EXPECT_EQ(computed_by(json{{"host", "n1"}, {"worker", ""}}), "n1");
  EXPECT_EQ(computed_by(json{{"host", 3}}), "");
  EXPECT_EQ(computed_by(json::object()), "");
}

TEST(StepPublish, TheProvenanceNamesWhereAndOnWhatItRan) {
  Step s;
  s.name = "s";
  s.tasks = 2;
  StepRecord r;
  r.node = "n1";
  r.cores = "0-3";
  r.start_s = 1;
  r.end_s = 3.5;
  place::Placement p;
  p.gpus = 1;
  p.gpu_ids = {"0"};
  p.gpu_devices.resize(1);
  p.gpu_devices[0].model = "Some GPU";
  ToolVersions tools{{"t", "1.2"}};
  ProvenanceContext c{"9.9", "linux", "w1", &tools, "start", "end"};
  json prov = step_provenance(s, r, p, json{{"i", json::array()}}, c);
  EXPECT_EQ(prov["host"], "n1");
  EXPECT_EQ(prov["cores"], "0-3");
  EXPECT_EQ(prov["gpus"], 1);
  EXPECT_EQ(prov["gpu_devices"], json::parse(R"([{"id":"0","model":"Some GPU"}])"));
  EXPECT_EQ(prov["tasks"], 2);
  EXPECT_EQ(prov["worker"], "w1");
  EXPECT_EQ(prov["engine_version"], "9.9");
  EXPECT_EQ(prov["start"], "start");
  EXPECT_EQ(prov["end"], "end");
  EXPECT_EQ(prov["elapsed_s"], 2.5);
  EXPECT_EQ(prov["inputs"], json::parse(R"({"i":[]})"));
}

TEST(StepPublish, AnObjectACollectorTookIsStoredAgainFromStaging) {
  store::MemoryStore objects;
  fs::path f = fs::temp_directory_path() / fmt::format("berth-publish-test.{}", ::getpid());
  std::ofstream(f) << "kept\n";
  auto name = store::MemoryStore().put_object("kept\n");  // its name, in no store of ours
  ASSERT_TRUE(name.ok());
  StepResult d;
  d.record.outputs["o"] = {*name, "bytes", *name};
  make_sure_of_objects(objects, {{"o", f.string()}}, "s", d);
  auto got = objects.get_object(*name);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->bytes, "kept\n");
  EXPECT_TRUE(d.problems.empty());
  fs::remove(f);
}

}  // namespace
}  // namespace berth::pipeline
