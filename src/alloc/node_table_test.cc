#include "alloc/node_table.h"

#include <gtest/gtest.h>

namespace berth::alloc {
namespace {

LocalHost here() {
  LocalHost h;
  h.hostname = "login1.cluster.org";
  h.aliases = {"localhost", "127.0.0.1"};
  h.usable_cores = 8;
  return h;
}

NodeSpec spec(std::string name, int64_t slots = 1, bool given = true) {
  NodeSpec s;
  s.name = std::move(name);
  s.slots = slots;
  s.slots_given = given;
  return s;
}

TEST(NodeTable, FqdnIsCutToShortNameKeepingRawnameAndAlias) {
  NodeTable p(here(), false);
  auto [idx, added] = p.insert(spec("node1.cluster.org"));
  ASSERT_TRUE(added);
  const Node& n = p.nodes()[idx];
  EXPECT_EQ(n.name, "node1");
  EXPECT_EQ(n.rawname, "node1.cluster.org");
  ASSERT_EQ(n.aliases.size(), 1u);
  EXPECT_EQ(n.aliases[0], "node1.cluster.org");
}

TEST(NodeTable, KeepFqdnKeepsTheFullName) {
  NodeTable p(here(), true);
  p.insert(spec("node1.cluster.org"));
  EXPECT_EQ(p.nodes()[0].name, "node1.cluster.org");
  EXPECT_TRUE(p.nodes()[0].aliases.empty());
}

TEST(NodeTable, IpAddressesAreNeverTruncated) {
  NodeTable p(here(), false);
  p.insert(spec("10.1.2.3"));
  p.insert(spec("fe80::1"));
  EXPECT_EQ(p.nodes()[0].name, "10.1.2.3");
  EXPECT_EQ(p.nodes()[1].name, "fe80::1");
}

TEST(NodeTable, DuplicateByShortNameOrAliasAddsNothing) {
  NodeTable p(here(), false);
  p.insert(spec("node1.cluster.org", 4));
  auto [idx, added] = p.insert(spec("node1", 9));
  EXPECT_FALSE(added);
  EXPECT_EQ(idx, 0u);
  NodeSpec by_alias = spec("other", 2);
  by_alias.aliases = {"node1.cluster.org"};
  EXPECT_FALSE(p.insert(by_alias).second);
  ASSERT_EQ(p.nodes().size(), 1u);
  EXPECT_EQ(p.nodes()[0].slots, 4);  // the held entry is authoritative
  EXPECT_EQ(p.total_slots(), 4);
}

TEST(NodeTable, LocalHostIsMergedNotDuplicated) {
  NodeTable p(here(), false);
  p.insert(spec("localhost", 2));
  EXPECT_FALSE(p.insert(spec("login1", 3)).second);
  EXPECT_FALSE(p.insert(spec("login1.cluster.org", 3)).second);
  EXPECT_FALSE(p.insert(spec("127.0.0.1", 3)).second);
  ASSERT_EQ(p.nodes().size(), 1u);
  EXPECT_TRUE(p.nodes()[0].local);
}

TEST(NodeTable, IndicesAreArrivalOrderAndTotalCountsOnlyUpNodes) {
  NodeTable p(here(), false);
  p.insert(spec("a", 2));
  p.insert(spec("b", 3));
  p.insert(spec("c", 5));
  EXPECT_EQ(p.nodes()[2].index, 2u);
  EXPECT_EQ(p.total_slots(), 10);
  p.exclude(1);
  EXPECT_EQ(p.total_slots(), 7);
  p.set_slots(2, 4);  // a filter lowering an up node's slots
  EXPECT_EQ(p.total_slots(), 6);
  p.set_slots(1, 1);  // and an excluded node's: not counted either way
  EXPECT_EQ(p.total_slots(), 6);
  p.exclude(1);  // twice is once
  EXPECT_EQ(p.total_slots(), 6);
  EXPECT_EQ(p.find("b"), 1u);  // a filtered node keeps its index
}

}  // namespace
}  // namespace berth::alloc
