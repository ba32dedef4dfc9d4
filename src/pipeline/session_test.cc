// The session's rerun after an edit of a settled pipeline (spec 04 §7.1): only the
// [[step]] tables whose bytes changed are read, the other steps come from the record;
// and whenever that cannot give what reading the whole file gives, the file is read
// whole. The session is handed a fake step runner (which runs nothing: an executed
// step's output is "<output> of <key>"), a memory store and a fake clock; its index,
// record and results are real files in a temporary directory. That real steps and a
// real store do the same end to end is tests/e2e/run_settled_test.sh's to show.
#include "pipeline/session.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "pipeline/fake_runner_for_test.h"
#include "store/memory_store.h"
#include "util/env.h"
#include "util/fake_clock_for_test.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

// a -> b (b reads a), c alone, and g, which finds its one value among the files.
constexpr const char* kPipeline = R"([pipeline]
name = "tables"

[[step]]
name = "a"
run = "echo a > {out.o}"
outputs = ["o"]

[[step]]
name = "b"
inputs = { i = "@a/o" }
run = "cat {in.i} > {out.o}; echo b >> {out.o}"
outputs = ["o"]

[[step]]
name = "c"
run = "echo c > {out.o}"
outputs = ["o"]

[[step]]
name = "g"
foreach = { k = { glob = "in/{k}.dat" } }
run = "echo {k} > {out.o}"
outputs = ["o"]
)";

class SessionTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "berth-session-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "in");
    std::ofstream(dir_ / "in" / "x.dat") << "x\n";
    write(kPipeline);
    runner_.results_dir = (dir_ / "results").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void write(const std::string& text) { std::ofstream(dir_ / "pipeline.toml") << text; }
  std::string text() {
    std::ifstream in(dir_ / "pipeline.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The file with `from` replaced by `to` (once; it must be there).
  void edit(const std::string& from, const std::string& to) {
    std::string t = text();
    size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    write(t);
  }
  std::string result(const std::string& step) {
    std::ifstream in(dir_ / "results" / step / "o");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  Result<RunOutcome> run() {
    SessionOptions o;
    o.pipeline = (dir_ / "pipeline.toml").string();
    o.engine_version = "berth test";
    o.clock = &clock_;
    SessionPlace place;
    place.nodes = {place::PoolNode{"n0", cores_, {}, std::nullopt, "", {}}};
    place.host = "n0";
    place.runner = &runner_;
    place.store = &store_;
    runner_.started.clear();
    BERTH_TRY(auto session, Session::open(std::move(o), std::move(place), env_, {}));
    return session->run(-1);
  }
  // Runs until a run is settled (one that executes, one that records, one settled).
  void settle() {
    for (int k = 0; k < 3; ++k) {
      auto r = run();
      ASSERT_TRUE(r.ok()) << r.error().message();
      if (r->settled) return;
    }
    FAIL() << "did not settle";
  }
  const StepRecord& step(const RunOutcome& r, const std::string& name) {
    for (const auto& s : r.report->steps) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << "no step " << name;
    return r.report->steps.at(0);
  }

  // The steps the last run() handed the runner, in name order.
  std::vector<std::string> ran() const {
    std::vector<std::string> out = runner_.started;
    std::sort(out.begin(), out.end());
    return out;
  }
  // What a step's output is when the fake runner computed it under `key`.
  static std::string made(const std::string& key) { return "o of " + key; }

  fs::path dir_;
  std::vector<int> cores_ = {0, 1};
  Env env_ = Env::from_process();
  FakeClock clock_;
  store::MemoryStore store_;
  FakeRunner runner_{store_};
};
using Names = std::vector<std::string>;

TEST_F(SessionTablesTest, AnEditedTableIsReadAloneAndTheOtherStepsComeFromTheRecord) {
  settle();
  // c's definition edited: c and the glob table are read; a, b are their entries.
  edit("echo c >", "echo C >");
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 2u);
  EXPECT_EQ(step(*r, "c").state, StepState::kExecuted);
  for (const char* n : {"a", "b", "g"}) EXPECT_EQ(step(*r, n).state, StepState::kCached) << n;
  EXPECT_EQ(ran(), Names{"c"});
  EXPECT_EQ(result("c"), made(step(*r, "c").key));
  // The record it leaves is whole: the next run is settled, every step cached.
  auto again = run();
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->settled);
  EXPECT_EQ(again->steps, 4u);

  // b, which reads a step not read again, edited: b is keyed from a's entry.
  edit("echo b >>", "echo B >>");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 2u);
  EXPECT_EQ(step(*r, "b").state, StepState::kExecuted);
  EXPECT_EQ(step(*r, "a").state, StepState::kCached);
  EXPECT_EQ(ran(), Names{"b"});
}

// The session is handed its clock, and everything it runs reads that one: an ordinary
// run's report and a settled run's both start when the fake clock says.
TEST_F(SessionTablesTest, TheRunTakesItsTimeFromTheClockItIsHanded) {
  const std::string when = utc_text(clock_.wall());
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->report.has_value());
  EXPECT_EQ(r->report->started, when);
  settle();
  auto again = run();
  ASSERT_TRUE(again.ok()) << again.error().message();
  ASSERT_TRUE(again->settled);
  EXPECT_NE(again->text.head.find("\"started\":\"" + when + "\""), std::string::npos)
      << again->text.head;
}

// The same bytes, a fact changed: the steps that rest on it, and what reads them, are
// made from their tables alone; every other step comes from the record.
TEST_F(SessionTablesTest, AChangedFactRemakesItsStepsAndWhatReadsThemAlone) {
  settle();
  fs::remove(dir_ / "results" / "c" / "o");
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 2u) << "c's table, and g's, which globs";
  EXPECT_EQ(step(*r, "c").state, StepState::kCached);
  EXPECT_TRUE(step(*r, "c").recorded.empty()) << "looked up, not taken from its entry";
  EXPECT_FALSE(step(*r, "a").recorded.empty());
  EXPECT_TRUE(ran().empty()) << "a store hit puts it back";
  EXPECT_EQ(result("c"), made(step(*r, "c").key));

  settle();
  fs::remove(dir_ / "results" / "a" / "o");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 3u) << "a's, b's (it reads a) and g's";
  EXPECT_TRUE(step(*r, "a").recorded.empty());
  EXPECT_TRUE(step(*r, "b").recorded.empty());
  EXPECT_FALSE(step(*r, "c").recorded.empty());
  EXPECT_TRUE(ran().empty());
  EXPECT_EQ(result("a"), made(step(*r, "a").key));
  auto again = run();
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->settled);
}

TEST_F(SessionTablesTest, AGlobTableIsReadAgainThoughItsBytesAreTheSame) {
  settle();
  const std::string before = result("g");
  ASSERT_FALSE(before.empty());
  fs::rename(dir_ / "in" / "x.dat", dir_ / "in" / "y.dat");
  edit("echo c >", "echo C >");
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  // g now finds y: "g" again, other bytes in its command.
  EXPECT_EQ(r->tables_read_again, 2u);
  EXPECT_EQ(step(*r, "g").state, StepState::kExecuted);
  EXPECT_EQ(ran(), (Names{"c", "g"}));
  EXPECT_EQ(result("g"), made(step(*r, "g").key));
  EXPECT_NE(result("g"), before) << "g finds y now: another command, another key";
}

// The file's bytes unchanged, only the files a glob finds: g expands otherwise.
TEST_F(SessionTablesTest, AGlobFindingOtherFilesUnderTheSameBytesIsKeyedAgain) {
  settle();
  fs::rename(dir_ / "in" / "x.dat", dir_ / "in" / "y.dat");
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(step(*r, "g").state, StepState::kExecuted);
  EXPECT_EQ(ran(), Names{"g"});
  EXPECT_FALSE(step(*r, "c").recorded.empty());
}

// Each of these cannot be answered from the edited tables alone: the file is read
// whole, with the answer reading it whole always gave.
TEST_F(SessionTablesTest, WhatTheTablesAloneCannotAnswerIsReadWhole) {
  settle();
  // a is read by b, which was not edited: b must be keyed again.
  edit("echo a >", "echo A >");
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 0u);
  EXPECT_EQ(step(*r, "a").state, StepState::kExecuted);
  EXPECT_EQ(step(*r, "b").state, StepState::kExecuted);
  EXPECT_EQ(ran(), (Names{"a", "b"}));

  // A step renamed.
  settle();
  edit("name = \"c\"", "name = \"c2\"");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 0u);
  EXPECT_EQ(step(*r, "c2").state, StepState::kCached) << "c's key, c's row";

  // The head edited.
  settle();
  edit("name = \"tables\"", "name = \"tables2\"");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 0u);
  EXPECT_EQ(r->report->pipeline, "tables2");

  // A fact of a step not read again no longer holds (its result removed).
  settle();
  fs::remove(dir_ / "results" / "a" / "o");
  edit("echo c >", "echo CC >");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 0u);
  EXPECT_EQ(ran(), Names{"c2"});
  EXPECT_EQ(result("a"), made(step(*r, "a").key)) << "a store hit puts it back";

  // An edit that names a step twice, or a table that no longer parses: reading whole
  // says what is wrong, as it always did.
  settle();
  std::string good = text();
  edit("name = \"c2\"", "name = \"a\"");
  auto dup = run();
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message().find("'a'"), std::string::npos) << dup.error().message();
  write(good);
  edit("run = \"echo CC > {out.o}\"", "run = [");
  auto bad = run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pipeline.toml:"), std::string::npos)
      << bad.error().message();
}

// A step taken from its entry is not placed, but a pool it no longer fits refuses the
// run as reading the whole file does.
TEST_F(SessionTablesTest, APoolTooSmallForAStepNotReadAgainStillRefusesIt) {
  write(R"([[step]]
name = "big"
cores = 2
run = "echo big > {out.o}"
outputs = ["o"]

[[step]]
name = "small"
run = "echo small > {out.o}"
outputs = ["o"]
)");
  settle();
  const std::string settled_text = text();
  cores_ = {0};
  edit("echo small", "echo SMALL");
  // Refused, with the pool's reason, not taken from the record; the edited step runs.
  auto state_of = [](const RunOutcome& o, std::string_view name) {
    for (const auto& st : o.report->steps) {
      if (st.name == name) return st.state;
    }
    return StepState::kPending;
  };
  auto edited = run();
  ASSERT_TRUE(edited.ok()) << edited.error().message();
  EXPECT_EQ(state_of(*edited, "big"), StepState::kRefused);
  EXPECT_EQ(state_of(*edited, "small"), StepState::kExecuted);
  EXPECT_EQ(edited->exit_code, 1);
  // The record's own bytes, a result removed.
  write(settled_text);
  fs::remove(dir_ / "results" / "small" / "o");
  auto removed = run();
  ASSERT_TRUE(removed.ok()) << removed.error().message();
  EXPECT_EQ(state_of(*removed, "big"), StepState::kRefused);
  EXPECT_EQ(removed->exit_code, 1);
}

// A graph made from the edited tables alone is the one reading the whole file gives,
// step for step and in the same order; where it would not be, the file is read whole.
TEST_F(SessionTablesTest, TheStepsComeInTheOrderReadingWholeGives) {
  write(R"([[step]]
name = "x"
inputs = { i = "@z/o" }
run = "cat {in.i} > {out.o}"
outputs = ["o"]

[[step]]
name = "t-{i}"
foreach = { i = [1, 2] }
run = "echo t > {out.o}"
outputs = ["o"]

[[step]]
name = "z"
run = "echo z > {out.o}"
outputs = ["o"]
)");
  auto names = [](const RunOutcome& r) {
    std::string out;
    for (const auto& s : r.report->steps) out += s.name + " ";
    return out;
  };
  settle();
  // x no longer reads z: it comes first now.
  edit("inputs = { i = \"@z/o\" }\nrun = \"cat {in.i} > {out.o}\"", "run = \"echo x > {out.o}\"");
  auto r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 0u);
  EXPECT_EQ(names(*r), "x t-1 t-2 z ");
  // The foreach values in another order: so are the steps.
  settle();
  edit("i = [1, 2]", "i = [2, 1]");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 0u);
  EXPECT_EQ(names(*r), "x t-2 t-1 z ");
  // An edit that keeps the graph's shape: read alone, in the same order.
  settle();
  edit("echo t >", "echo T >");
  r = run();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->tables_read_again, 1u);
  EXPECT_EQ(names(*r), "x t-2 t-1 z ");
  EXPECT_EQ(ran().size(), 1u) << "t-1 and t-2 have one command, one key: computed once";
  EXPECT_EQ(result("t-1"), made(step(*r, "t-1").key));
  EXPECT_EQ(result("t-2"), result("t-1"));
}

}  // namespace
}  // namespace berth::pipeline
