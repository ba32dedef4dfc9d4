#include <gtest/gtest.h>

#include "alloc/source.h"

namespace berth::alloc {
namespace internal {
// simulator.cc: parse_simulate with its node bound as a parameter.
Result<std::vector<NodeSpec>> parse_simulate(std::string_view text, std::string_view origin,
                                             uint64_t max_nodes);
}  // namespace internal

namespace {

// "name/slots" per node, space-separated; every simulated node must have slots given.
std::string render(const std::vector<NodeSpec>& nodes) {
  std::string out;
  for (const NodeSpec& n : nodes) {
    if (!out.empty()) out += ' ';
    out += n.name + "/" + std::to_string(n.slots);
    if (!n.slots_given) out += "(not given)";
  }
  return out;
}

struct Good {
  std::string text;
  std::string want;
};

TEST(Simulate, BuildsGroupsInOrder) {
  const Good cases[] = {
      {"3x4,2x8", "sim1/4 sim2/4 sim3/4 sim4/8 sim5/8"},
      {"1x1", "sim1/1"},
      {"1X2", "sim1/2"},
      {"2x01", "sim1/1 sim2/1"},
      {"1x2147483647", "sim1/2147483647"},
  };
  for (const Good& c : cases) {
    auto r = parse_simulate(c.text, "--simulate");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << c.text;
  }
}

TEST(Simulate, PadsNamesToTheWidthOfTheNodeCount) {
  auto nine = parse_simulate("9x1", "--simulate");
  ASSERT_TRUE(nine.ok());
  EXPECT_EQ(nine->front().name, "sim1");
  EXPECT_EQ(nine->back().name, "sim9");

  auto ten = parse_simulate("10x1", "--simulate");
  ASSERT_TRUE(ten.ok());
  EXPECT_EQ(ten->front().name, "sim01");
  EXPECT_EQ(ten->back().name, "sim10");

  auto twelve = parse_simulate("4x2,8x1", "--simulate");
  ASSERT_TRUE(twelve.ok());
  ASSERT_EQ(twelve->size(), 12u);
  EXPECT_EQ((*twelve)[0].name, "sim01");
  EXPECT_EQ((*twelve)[4].name, "sim05");
  EXPECT_EQ((*twelve)[4].slots, 1);
  EXPECT_EQ((*twelve)[11].name, "sim12");

  auto hundred = parse_simulate("100x1", "--simulate");
  ASSERT_TRUE(hundred.ok());
  EXPECT_EQ(hundred->front().name, "sim001");
  EXPECT_EQ(hundred->back().name, "sim100");
}

struct Bad {
  std::string text;
  int position;
  std::string says;
};

TEST(Simulate, RefusesMalformedInputNamingThePosition) {
  const Bad cases[] = {
      {"", 1, "empty"},
      {"3", 1, "is not NODESxSLOTS"},
      {"x4", 1, "expected a node count"},
      {"3x", 3, "expected a slot count"},
      {"0x4", 1, "node count '0' is out of range"},
      {"3x0", 3, "slot count '0' is out of range"},
      {"3x4,", 5, "empty item"},
      {",3x4", 1, "empty item"},
      {"3x4,,2x8", 5, "empty item"},
      {"3x4x5", 4, "expected a digit, found 'x'"},
      {"-3x4", 1, "expected a digit, found '-'"},
      {"3x-4", 3, "expected a digit, found '-'"},
      {"3 x4", 2, "expected a digit, found ' '"},
      {"3x4, 2x8", 5, "expected a digit, found ' '"},
      {"3x4\n", 4, "expected a digit, found '\\x0a'"},
      {std::string("3x\0", 3), 3, "found '\\x00'"},
      {"3x\xff", 3, "found '\\xff'"},
      {"10000001x1", 1, "out of range: expected 1 to 10000000"},
      {"99999999999999999999x1", 1, "out of range"},
      {"5000000x1,5000001x1", 11, "more than 10000000 nodes in all"},
      {"3x2147483648", 3, "out of range: expected 1 to 2147483647"},
  };
  for (const Bad& c : cases) {
    auto r = parse_simulate(c.text, "--simulate");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    const std::string prefix = "--simulate: position " + std::to_string(c.position) + ": ";
    EXPECT_EQ(r.error().message().rfind(prefix, 0), 0u) << c.text << ": " << r.error().message();
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << c.text << ": " << r.error().message();
  }
}

// The bound is a parameter here (10^7 in use) so that reaching it exactly stays cheap.
TEST(Simulate, BoundsTheTotalNodeCount) {
  EXPECT_TRUE(internal::parse_simulate("3x4,2x8", "--simulate", 5).ok());
  auto r = internal::parse_simulate("3x4,3x8", "--simulate", 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "--simulate: position 5: more than 5 nodes in all");
  auto one = internal::parse_simulate("6x1", "--simulate", 5);
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().message(),
            "--simulate: position 1: node count '6' is out of range: expected 1 to 5");
}

TEST(Simulate, DiscoverIsNotMineWithoutTheOption) {
  Env env;
  Options opts;
  LocalHost local;
  auto r = discover_simulator(Input{env, opts, local});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(Simulate, DiscoverBuildsTheAllocation) {
  Env env;
  Options opts;
  opts.simulate = "2x3";
  LocalHost local;
  auto r = discover_simulator(Input{env, opts, local});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(render((*r)->nodes()), "sim1/3 sim2/3");
  EXPECT_TRUE((*r)->job_id.empty());
}

TEST(Simulate, DiscoverReportsABadSpecification) {
  Env env;
  Options opts;
  opts.simulate = "2y3";
  LocalHost local;
  auto r = discover_simulator(Input{env, opts, local});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("--simulate: position 1: ", 0), 0u) << r.error().message();
}

}  // namespace
}  // namespace berth::alloc
