// Targets: a graph cut down to the steps named or matched and what they need.
#include "pipeline/targets.h"

#include <gtest/gtest.h>

#include "pipeline/pipeline_file.h"

namespace berth::pipeline {
namespace {

// a-{x} <- b-{x} <- total, and an unrelated lone step.
constexpr const char* kFanIn = R"(
[[step]]
name = "a-{x}"
foreach = { x = ["1", "2", "3"] }
run = "a"
outputs = ["o"]
[[step]]
name = "b-{x}"
foreach = { x = ["1", "2", "3"] }
run = "b"
inputs = { i = "@a-{x}/o" }
outputs = ["o"]
[[step]]
name = "total"
run = "t"
inputs = { parts = ["@b-1/o", "@b-2/o", "@b-3/o"] }
outputs = ["o"]
[[step]]
name = "lone"
run = "l"
outputs = ["o"]
)";

Graph fan_in() {
  auto f = parse_pipeline(kFanIn, "p.toml");
  EXPECT_TRUE(f.ok()) << f.error().message();
  auto g = expand(*f, [](const std::string&) { return true; });
  EXPECT_TRUE(g.ok()) << g.error().message();
  return std::move(*g);
}

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& s : g.steps) out.push_back(s.name);
  return out;
}

struct Case {
  std::vector<std::string> targets;
  std::vector<std::string> steps;  // what is selected, in graph order
};

TEST(Targets, SelectWhatIsNamedAndEverythingItNeeds) {
  const Case cases[] = {
      {{}, {"a-1", "a-2", "a-3", "b-1", "b-2", "b-3", "total", "lone"}},
      {{"lone"}, {"lone"}},
      {{"b-2"}, {"a-2", "b-2"}},
      {{"b-2", "a-3"}, {"a-2", "a-3", "b-2"}},
      {{"total"}, {"a-1", "a-2", "a-3", "b-1", "b-2", "b-3", "total"}},
      {{"b-*"}, {"a-1", "a-2", "a-3", "b-1", "b-2", "b-3"}},
      {{"?-1"}, {"a-1", "b-1"}},
      {{"b-[13]", "lone"}, {"a-1", "a-3", "b-1", "b-3", "lone"}},
      {{"b-1", "b-1", "b-?"}, {"a-1", "a-2", "a-3", "b-1", "b-2", "b-3"}},
  };
  for (const Case& c : cases) {
    auto g = select_targets(fan_in(), c.targets);
    ASSERT_TRUE(g.ok()) << g.error().message();
    EXPECT_EQ(names(*g), c.steps) << ::testing::PrintToString(c.targets);
  }
}

TEST(Targets, IndicesAreRemappedToTheSmallerGraph) {
  auto g = select_targets(fan_in(), {"b-3"});
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(names(*g), (std::vector<std::string>{"a-3", "b-3"}));
  EXPECT_EQ(g->steps[1].deps, (std::vector<size_t>{0}));
  const InputItem& item = g->steps[1].inputs.at("i").items.at(0);
  EXPECT_EQ(item.kind, InputItem::Kind::kStepOutput);
  EXPECT_EQ(item.step, 0u);
}

TEST(Targets, ANameOrPatternThatSelectsNothingIsAnErrorNamingIt) {
  auto g = select_targets(fan_in(), {"b-1", "nope"});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), Errc::kInvalidInput);
  EXPECT_EQ(g.error().message(), "p.toml: no step is named 'nope'");
  g = select_targets(fan_in(), {"c-*"});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message(), "p.toml: no step matches the pattern 'c-*'");
  // A template is not an expanded name.
  g = select_targets(fan_in(), {"a-{x}"});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message(), "p.toml: no step is named 'a-{x}'");
}

}  // namespace
}  // namespace berth::pipeline
