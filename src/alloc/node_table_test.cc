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

// insert_all() inserts ahead of nothing: the same nodes, indices, slots and aliases as
// insert() one by one, with duplicates closer together than its look-ahead (a node
// and its short name two apart, an alias one apart), across it, and at the very end.
TEST(NodeTable, InsertAllIsInsertInOrder) {
  std::vector<NodeSpec> specs;
  for (int i = 0; i < 40; ++i) specs.push_back(spec("n" + std::to_string(i), i + 1));
  specs.insert(specs.begin() + 3, spec("n1.cluster.org", 50));  // n1 again, two on
  NodeSpec by_alias = spec("other", 51);
  by_alias.aliases = {"n5"};
  specs.insert(specs.begin() + 7, by_alias);                    // n5 again, one on
  specs.push_back(spec("n0", 52));                              // far behind
  specs.push_back(spec("login1", 53));                          // the local host
  specs.push_back(spec("localhost", 54));                       // the local host again
  specs.push_back(spec("n39", 55));                             // the last spec a duplicate

  NodeTable one_by_one(here(), false);
  for (const NodeSpec& s : specs) one_by_one.insert(s);
  NodeTable all(here(), false);
  all.insert_all([&](const NodeSink& add) {
    for (const NodeSpec& s : specs) add(s);
  });
  ASSERT_EQ(all.nodes().size(), one_by_one.nodes().size());
  EXPECT_EQ(all.nodes().size(), 41u);  // n0..n39 and the local host
  for (size_t i = 0; i < all.nodes().size(); ++i) {
    const Node& a = all.nodes()[i];
    const Node& b = one_by_one.nodes()[i];
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.name, b.name) << i;
    EXPECT_EQ(a.rawname, b.rawname) << i;
    EXPECT_EQ(a.aliases, b.aliases) << i;
    EXPECT_EQ(a.slots, b.slots) << i;
    EXPECT_EQ(a.local, b.local) << i;
  }
  EXPECT_EQ(all.total_slots(), one_by_one.total_slots());
  EXPECT_EQ(all.find("n1.cluster.org"), 1u);
  EXPECT_EQ(all.find("other"), std::nullopt);  // a duplicate's own name reaches nothing
  // Fewer nodes than the look-ahead, and none.
  NodeTable few(here(), false);
  few.insert_all([](const NodeSink& add) {
    add(spec("a"));
    add(spec("b"));
  });
  ASSERT_EQ(few.nodes().size(), 2u);
  EXPECT_EQ(few.nodes()[1].name, "b");
  NodeTable none(here(), false);
  none.insert_all([](const NodeSink&) {});
  EXPECT_TRUE(none.nodes().empty());
}

}  // namespace
}  // namespace berth::alloc
