// Fan-in, per-step params, written-out combinations and [defaults], as expand() gives
// them (spec 04 §2.5, §3.1, §3.2, §3.6).
#include "pipeline/fan_in.h"

#include <gtest/gtest.h>

#include "pipeline/key.h"
#include "pipeline/pipeline_file.h"

namespace berth::pipeline {
namespace {

Result<Graph> expand_text(const std::string& text, const ConfigOverrides& o = {}) {
  std::shared_ptr<const void> doc;
  BERTH_TRY(PipelineFile pf, parse_pipeline(text, "p.toml", doc, o));
  return expand(pf, [](const std::string&) { return true; });
}

const Step& named(const Graph& g, const std::string& name) {
  auto i = g.find(name);
  EXPECT_TRUE(i.has_value()) << name;
  return g.steps[*i];
}

std::vector<std::string> items(const Step& s, const std::string& input) {
  std::vector<std::string> out;
  for (const InputItem& item : s.inputs.at(input).items) out.push_back(item.text);
  return out;
}

TEST(FanIn, IsAPatternInTheStepPartOnly) {
  EXPECT_TRUE(is_fan_in("@count-*/counts"));
  EXPECT_TRUE(is_fan_in("@s-[ab]/o"));
  EXPECT_TRUE(is_fan_in("@s-?/o"));
  EXPECT_FALSE(is_fan_in("@count-a/counts"));
  EXPECT_FALSE(is_fan_in("data/*.txt"));
  EXPECT_FALSE(is_fan_in("@a/o*"));  // the output is never a pattern
  EXPECT_FALSE(is_fan_in("@nothing"));
}

TEST(FanIn, CollectsEveryMatchInExpansionOrderTheConsumersKeysFirst) {
  auto g = expand_text(R"(
[[step]]
name = "split-{sample}-{chunk}"
foreach = { sample = ["b", "a"], chunk = [2, 10, 1] }
run = "x > {out.o}"
outputs = ["o"]

[[step]]
name = "merge-{sample}"
foreach = { sample = ["b", "a"] }
inputs = { parts = "@split-{sample}-*/o" }
run = "cat {in.parts} > {out.o}"
outputs = ["o"]

[[step]]
name = "all"
inputs = { parts = ["@merge-*/o", "extra.txt"] }
run = "cat {in.parts}"
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  // foreach keys sorted: chunk varies slowest; each key's values in the order written.
  EXPECT_EQ(items(named(*g, "merge-a"), "parts"),
            (std::vector<std::string>{"@split-a-2/o", "@split-a-10/o", "@split-a-1/o"}));
  EXPECT_EQ(items(named(*g, "merge-b"), "parts"),
            (std::vector<std::string>{"@split-b-2/o", "@split-b-10/o", "@split-b-1/o"}));
  EXPECT_TRUE(named(*g, "merge-a").inputs.at("parts").is_list);  // written as a string
  EXPECT_EQ(items(named(*g, "all"), "parts"),
            (std::vector<std::string>{"@merge-b/o", "@merge-a/o", "extra.txt"}));
  EXPECT_EQ(named(*g, "all").deps.size(), 2u);
  // Each item resolves to the step it names.
  const Step& m = named(*g, "merge-a");
  for (const InputItem& item : m.inputs.at("parts").items) {
    EXPECT_EQ("@" + g->steps[item.step].name + "/o", item.text);
  }
}

TEST(FanIn, AParamHoldingAForeachKeyIsEachStepsOwnAndItsKeys) {
  auto g = expand_text(R"(
[config]
scale = 3

[[step]]
name = "sim-{lr}"
foreach = { lr = ["0.1", "0.01"] }
params = { rate = "{lr}", label = "run {{x}} {config.scale}", n = 2 }
run = "echo {param.rate} {param.label} > {out.o}"
outputs = ["o"]
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  const Step& a = named(*g, "sim-0.1");
  const Step& b = named(*g, "sim-0.01");
  EXPECT_EQ(a.params().at("rate").text, "0.1");
  EXPECT_EQ(b.params().at("rate").text, "0.01");
  EXPECT_EQ(a.params().at("label").text, "run {x} 3");
  EXPECT_EQ(a.params().at("n"), (Param{Param::Type::kInteger, "2"}));
  EXPECT_EQ(a.command()[0][0].value, "echo 0.1 run {x} 3 > ");
  InputHashes none;
  ToolVersions tools;
  EXPECT_NE(*key_of(a, none, tools), *key_of(b, none, tools));
}

TEST(FanIn, CombinationsWrittenOutAreOneStepEachWithDefaults) {
  auto g = expand_text(R"(
[defaults]
cores = 2
retries = 1

[[step]]
name = "z-{lr}-{steps}"
foreach = [{ lr = 0.10, steps = 100 }, { lr = 1e-2, steps = 200 }, { lr = 0.1, steps = 300 }]
run = "x"
retries = 0
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_EQ(g->steps.size(), 3u);
  EXPECT_EQ(g->steps[0].name, "z-0.1-100");
  EXPECT_EQ(g->steps[1].name, "z-0.01-200");
  EXPECT_EQ(g->steps[2].name, "z-0.1-300");
  EXPECT_EQ(g->steps[0].cores, 2);    // from [defaults]
  EXPECT_EQ(g->steps[0].retries, 0);  // the step's own
}

TEST(FanIn, ConfigOverridesReachEveryTemplate) {
  const char* text = R"(
[config]
n = 1
[[step]]
name = "s-{config.n}"
run = "echo {config.n}"
)";
  ConfigOverrides o;
  o.assignments = {"n=5"};
  auto g = expand_text(text, o);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->steps[0].name, "s-5");
  EXPECT_EQ(g->steps[0].command()[0][0].value, "echo 5");
}

TEST(FanIn, APatternMatchingNothingOrAStepWithoutTheOutputIsAnError) {
  const char* head =
      "[[step]]\nname = 'a-{i}'\nforeach = { i = [1, 2] }\nrun = 'x'\n"
      "outputs = ['o']\n[[step]]\nname = 'm'\nrun = 'x'\n";
  auto none = expand_text(std::string(head) + "inputs = { p = '@b-*/o' }\n");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message(), "p.toml:9:16: step 'm': inputs.p: '@b-*/o' matches no step");
  auto other = expand_text(std::string(head) + "inputs = { p = '@a-*/q' }\n");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message().find("'@a-*/q' matches step 'a-1', which has no output 'q'"),
            std::string::npos)
      << other.error().message();
  // Matching itself is the cycle it is.
  auto self = expand_text(
      "[[step]]\nname = 's-1'\nrun = 'x'\noutputs = ['o']\n"
      "inputs = { p = '@s-*/o' }\n");
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.error().message().find("cycle: s-1 -> s-1"), std::string::npos)
      << self.error().message();
}

}  // namespace
}  // namespace berth::pipeline
