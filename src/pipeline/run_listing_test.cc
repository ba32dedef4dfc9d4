// berth run's step lines and summary line (run_listing.h), from reports built by hand.
#include "pipeline/run_listing.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth::pipeline {
namespace {

StepRecord rec(std::string name, StepState st, std::string reason, std::string command = "") {
  StepRecord r;
  r.name = std::move(name);
  r.state = st;
  r.reason = std::move(reason);
  r.command = std::move(command);
  return r;
}

// A dry run's report: `n` steps of count-{i}, the first `cached` of them cached, the
// rest would run, then one total step that would run.
RunReport dry(size_t n, size_t cached) {
  RunReport r;
  r.dry_run = true;
  r.templates = {"count-{i}", "total"};
  for (size_t i = 0; i < n; ++i) {
    r.steps.push_back(i < cached ? rec(fmt::format("count-{}", i), StepState::kCached,
                                       "cached: the store has a result for this key")
                                 : rec(fmt::format("count-{}", i), StepState::kWouldRun,
                                       "new: no earlier run of this step is recorded here",
                                       fmt::format("wc -l in/{} > out/n", i)));
    r.template_of.push_back(0);
  }
  r.steps.push_back(rec("total", StepState::kWouldRun, "an input it reads would be recomputed",
                        "cat in/parts > out/sum"));
  r.template_of.push_back(1);
  return r;
}

TEST(RunListing, EachReasonIsSaidOnceAfterItsState) {
  struct Case {
    StepRecord s;
    const char* line;
  } cases[] = {
      {rec("a", StepState::kWouldRun, "new: no earlier run of this step is recorded here"),
       "would-run a: new: no earlier run of this step is recorded here"},
      {rec("b", StepState::kCached, "cached: the store has a result for this key"),
       "cached    b: the store has a result for this key"},
      {rec("c", StepState::kSkipped, "not run: 'a' failed"), "skipped   c: not run: 'a' failed"},
      {rec("d", StepState::kFailed, "exited with status 1"), "failed    d: exited with status 1"},
      {rec("e", StepState::kExecuted, ""), "executed  e"},
      // Only a whole word and its colon are the state said again.
      {rec("f", StepState::kCached, "cachedness: odd"), "cached    f: cachedness: odd"},
  };
  for (const auto& c : cases) EXPECT_EQ(step_line(c.s), c.line);
  EXPECT_EQ(step_line(rec("g", StepState::kFailed, "boom"), "; its output: berth log p g"),
            "failed    g: boom; its output: berth log p g");
}

TEST(RunListing, ADryRunListsEveryStepUpToTheLimit) {
  RunReport r = dry(kMostStepLines - 1, 1);  // with total: exactly the limit
  auto lines = step_lines(r, {true, false, false, nullptr});
  ASSERT_EQ(lines.size(), kMostStepLines);
  EXPECT_EQ(lines[0], "cached    count-0: the store has a result for this key");
  EXPECT_EQ(lines[1], "would-run count-1: new: no earlier run of this step is recorded here");
  EXPECT_EQ(lines.back(), "would-run total: an input it reads would be recomputed");
}

TEST(RunListing, PastTheLimitADryRunIsSummarisedPerTemplateUnlessEveryStepIsAsked) {
  RunReport r = dry(3000, 200);
  auto lines = step_lines(r, {true, false, false, nullptr});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "count-{i}: 3000 step(s), 2800 would-run, 200 cached; e.g. would-run count-200: new: "
            "no earlier run of this step is recorded here");
  EXPECT_EQ(lines[1],
            "total: 1 step(s), 1 would-run; e.g. would-run total: an input it reads would be "
            "recomputed");
  EXPECT_EQ(lines[2],
            "(3001 step lines summarised per step template; --every-step lists each step)");
  EXPECT_EQ(step_lines(r, {true, true, false, nullptr}).size(), 3001u);
  // A template with nothing to run shows a cached step as its example.
  RunReport all_cached = dry(60, 60);
  EXPECT_EQ(step_lines(all_cached, {true, false, false, nullptr})[0],
            "count-{i}: 60 step(s), 60 cached; e.g. cached    count-0: the store has a result "
            "for this key");
}

TEST(RunListing, CommandsAreEachWouldRunStepsNameAndCommandEveryOne) {
  RunReport r = dry(3000, 1);
  r.steps[5] = rec("count-5", StepState::kRefused, "can never run here: asks for 3 GPUs");
  auto lines = step_lines(r, {true, false, true, nullptr});
  ASSERT_EQ(lines.size(), 3000u);  // 2998 commands, the refusal, total's command
  EXPECT_EQ(lines[0], "count-1: wc -l in/1 > out/n");
  EXPECT_EQ(lines[4], "refused   count-5: can never run here: asks for 3 GPUs");
  EXPECT_EQ(lines.back(), "total: cat in/parts > out/sum");
}

TEST(RunListing, AnOrdinaryRunListsOnlyWhatWentWrongWithItsHint) {
  RunReport r;
  r.steps = {rec("a", StepState::kExecuted, "new"), rec("b", StepState::kFailed, "boom"),
             rec("c", StepState::kSkipped, "not run: 'b' failed")};
  ListingOptions o;
  o.hint = [](const StepRecord& s) {
    return s.state == StepState::kFailed ? "; its output: berth log p " + s.name : "";
  };
  EXPECT_EQ(step_lines(r, o),
            (std::vector<std::string>{"failed    b: boom; its output: berth log p b",
                                      "skipped   c: not run: 'b' failed"}));
}

TEST(RunListing, TheSummaryLineCountsWouldRunStepsApartFromSkippedOnes) {
  RunReport r = dry(3, 1);
  r.steps.push_back(rec("x", StepState::kSkipped, "not run: 'y' was refused"));
  r.elapsed_s = 0.5;
  EXPECT_EQ(summary_line(r),
            "5 step(s): 3 would run, 1 cached, 0 failed, 1 skipped, 0 refused in 0.50 s");
  r.dry_run = false;
  r.steps = {rec("a", StepState::kExecuted, ""), rec("b", StepState::kCancelled, "")};
  EXPECT_EQ(summary_line(r),
            "2 step(s): 1 executed, 0 cached, 0 failed, 0 skipped, 0 refused, 1 cancelled in "
            "0.50 s");
}

}  // namespace
}  // namespace berth::pipeline
