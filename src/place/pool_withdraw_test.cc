// Pool::withdraw: a node whose agent was lost leaves the pool (spec 08 §5).
#include <gtest/gtest.h>

#include "place/pool.h"

namespace berth::place {
namespace {

PoolNode node(std::string name, std::vector<int> cores, int gpus = 0) {
  PoolNode n;
  n.name = std::move(name);
  n.cores = std::move(cores);
  for (int g = 0; g < gpus; ++g) n.gpu_ids.push_back(std::to_string(g));
  return n;
}

Request req(int tasks, int gpus = 0, std::optional<int> nodes = std::nullopt) {
  Request r;
  r.tasks = tasks;
  r.gpus = gpus;
  r.nodes = nodes;
  return r;
}

TEST(PoolWithdraw, NothingMoreIsGrantedOnAWithdrawnNode) {
  Pool pool({node("a", {0, 1}), node("b", {0, 1})});
  EXPECT_TRUE(pool.withdraw("a"));
  for (int k = 0; k < 2; ++k) {
    auto g = pool.grant(req(1));
    ASSERT_TRUE(g.ok() && g->has_value());
    EXPECT_EQ((*g)->placement.nodes, std::vector<std::string>{"b"});
  }
  // b is full, a is gone: not now, since b frees up later.
  auto g = pool.grant(req(1));
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->has_value());
}

TEST(PoolWithdraw, WhatOnlyTheWithdrawnNodeHeldIsRefusedNamingIt) {
  Pool pool({node("a", {0, 1}, 2), node("b", {0, 1})});
  pool.withdraw("a");
  auto g = pool.grant(req(1, 1));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), Errc::kRefused);
  EXPECT_NE(g.error().message().find("left out of the pool: a"), std::string::npos)
      << g.error().message();
  // Two nodes asked for, one left.
  auto two = pool.grant(req(2, 0, 2));
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().code(), Errc::kRefused);
}

TEST(PoolWithdraw, HeldGrantsThereAreReleasedAsUsual) {
  Pool pool({node("a", {0})});
  auto g = pool.grant(req(1));
  ASSERT_TRUE(g.ok() && g->has_value());
  uint64_t seen = pool.releases();
  EXPECT_TRUE(pool.withdraw("a"));
  EXPECT_NE(pool.releases(), seen);  // a caller waiting for a release looks again
  EXPECT_FALSE(pool.withdraw("a"));  // once
  EXPECT_FALSE(pool.withdraw("zz"));
  pool.release((*g)->id);
  EXPECT_EQ(pool.held(), 0u);
  EXPECT_FALSE(pool.grant(req(1)).ok());  // never again: the only node is gone
}

}  // namespace
}  // namespace berth::place
