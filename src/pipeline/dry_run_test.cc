// A dry run's commands and templates (dry_run.h), on graphs parsed from text.
#include "pipeline/dry_run.h"

#include <gtest/gtest.h>

#include <string>

#include "pipeline/pipeline_file.h"

namespace berth::pipeline {
namespace {

Graph graph(const std::string& toml) {
  auto f = parse_pipeline(toml, "p.toml");
  EXPECT_TRUE(f.ok()) << f.error().message();
  auto g = expand(*f, [](const std::string&) { return true; });
  EXPECT_TRUE(g.ok()) << g.error().message();
  return std::move(*g);
}

constexpr const char* kPipeline = R"(
[[step]]
name = "count-{s}"
foreach = { s = ["a", "b"] }
inputs = { text = "data/{s}.txt" }
outputs = ["counts"]
run = "sort {in.text} | uniq -c > {out.counts}"

[[step]]
name = "total"
inputs = { parts = ["@count-a/counts", "@count-b/counts"] }
outputs = ["sum"]
cmd = ["cat", "{in.parts}", "--out={out.sum}", "two words"]
env = { LANG = "C" }

[[step]]
name = "note"
outputs = ["o"]
run = "echo \"$WHO\" > {out.o}"
env = { WHO = "it's me" }
)";

const Step& named(const Graph& g, const std::string& name) {
  for (const Step& s : g.steps) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no step " << name;
  return g.steps[0];
}

TEST(DryRun, ACommandIsRenderedAsItRunsInItsStagingDirectory) {
  Graph g = graph(kPipeline);
  // A script as written, its paths those of the staging directory it runs in.
  EXPECT_EQ(dry_run_command(named(g, "count-a")), "sort in/a.txt | uniq -c > out/counts");
  // Two items of one name each go to a directory of their own; every word quoted as
  // a shell needs it; the env first.
  EXPECT_EQ(dry_run_command(named(g, "total")),
            "LANG=C cat in/parts.0/counts in/parts.1/counts --out=out/sum 'two words'");
  // A script with env: through sh -c, so that the variables reach all of it.
  EXPECT_EQ(dry_run_command(named(g, "note")), "WHO='it'\\''s me' sh -c 'echo \"$WHO\" > out/o'");
}

TEST(DryRun, TheReportGetsEachStepsTemplateAndEachWouldRunStepsCommand) {
  Graph g = graph(kPipeline);
  RunReport rep;
  for (const Step& s : g.steps) {
    StepRecord r;
    r.name = s.name;
    r.state = s.name == "count-b" ? StepState::kCached : StepState::kWouldRun;
    rep.steps.push_back(r);
  }
  describe_dry_run(g, false, rep);
  for (const auto& s : rep.steps) EXPECT_EQ(s.command, "") << s.name;
  describe_dry_run(g, true, rep);
  ASSERT_EQ(rep.template_of.size(), g.steps.size());
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const std::string& t = rep.templates.at(rep.template_of[i]);
    if (g.steps[i].name == "count-a") {
      EXPECT_EQ(t, "count-{s}");
      EXPECT_EQ(rep.steps[i].command, "sort in/a.txt | uniq -c > out/counts");
    }
    if (g.steps[i].name == "count-b") {
      EXPECT_EQ(t, "count-{s}");
      EXPECT_EQ(rep.steps[i].command, "");  // cached: nothing would run
    }
    if (g.steps[i].name == "total") EXPECT_EQ(t, "total");
  }
  EXPECT_EQ(rep.templates.size(), 3u);
}

}  // namespace
}  // namespace berth::pipeline
