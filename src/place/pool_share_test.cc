// Shares of one GPU (pool.h): packed onto one device, never past a whole one, never on
// a device a whole-GPU grant holds, and said in every grant's notes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "place/pool.h"

namespace berth::place {
namespace {

PoolNode gpu_node(std::string name, int cores, int gpus) {
  PoolNode n;
  n.name = std::move(name);
  for (int c = 0; c < cores; ++c) n.cores.push_back(c);
  for (int g = 0; g < gpus; ++g) n.gpu_ids.push_back(std::to_string(g));
  n.gpu_variable = "CUDA_VISIBLE_DEVICES";
  return n;
}

Request share(int thousandths, int tasks = 1) {
  Request r;
  r.tasks = tasks;
  r.gpu_share = thousandths;
  return r;
}

Request whole(int gpus) {
  Request r;
  r.gpus = gpus;
  return r;
}

Grant must(Pool& pool, const Request& r) {
  auto g = pool.grant(r);
  EXPECT_TRUE(g.ok()) << g.error().message();
  EXPECT_TRUE(g.ok() && g->has_value()) << "not now";
  return g.ok() && g->has_value() ? **g : Grant{};
}

bool not_now(Pool& pool, const Request& r) {
  auto g = pool.grant(r);
  return g.ok() && !g->has_value();
}

TEST(PoolShare, SharesFillOneDeviceBeforeTheNext) {
  Pool pool({gpu_node("n1", 8, 2)});
  Grant a = must(pool, share(500));
  Grant b = must(pool, share(500));
  Grant c = must(pool, share(250));
  // Two halves make GPU 0 whole; the quarter goes to GPU 1, leaving it for shares.
  EXPECT_EQ(a.placement.gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(b.placement.gpu_ids, std::vector<std::string>{"0"});
  EXPECT_EQ(c.placement.gpu_ids, std::vector<std::string>{"1"});
  EXPECT_EQ(a.placement.gpus, 1);
  // Cores stay disjoint: a share of a GPU is not a share of a core.
  EXPECT_NE(a.placement.cores, b.placement.cores);
  Grant d = must(pool, share(750));
  EXPECT_EQ(d.placement.gpu_ids, std::vector<std::string>{"1"});
  // Both devices are full now.
  EXPECT_TRUE(not_now(pool, share(1)));
}

TEST(PoolShare, EveryGrantSaysWhatItShares) {
  Pool pool({gpu_node("n1", 4, 1)});
  Grant a = must(pool, share(300));
  ASSERT_EQ(a.placement.notes.size(), 1u);
  EXPECT_EQ(a.placement.notes[0], "shares GPU 0 on n1: it was given 0.3 of it, the first share of it");
  Grant b = must(pool, share(250));
  ASSERT_EQ(b.placement.notes.size(), 1u);
  EXPECT_EQ(b.placement.notes[0],
            "shares GPU 0 on n1: it was given 0.25 of it, beside 1 other share(s) holding 0.3");
}

TEST(PoolShare, WholeGrantsAndSharesNeverMeet) {
  Pool pool({gpu_node("n1", 8, 2)});
  Grant held = must(pool, whole(1));  // GPU 0, whole
  Grant s = must(pool, share(500));
  EXPECT_EQ(s.placement.gpu_ids, std::vector<std::string>{"1"});
  // GPU 1 is shared, GPU 0 held: a whole one waits.
  EXPECT_TRUE(not_now(pool, whole(1)));
  pool.release(s.id);
  Grant w = must(pool, whole(1));
  EXPECT_EQ(w.placement.gpu_ids, std::vector<std::string>{"1"});
  EXPECT_TRUE(w.placement.notes.empty());
  // With both held whole, a share waits too.
  EXPECT_TRUE(not_now(pool, share(100)));
  pool.release(held.id);
  EXPECT_EQ(must(pool, share(100)).placement.gpu_ids, std::vector<std::string>{"0"});
}

TEST(PoolShare, ReleaseGivesTheShareBack) {
  Pool pool({gpu_node("n1", 4, 1)});
  Grant a = must(pool, share(600));
  EXPECT_TRUE(not_now(pool, share(600)));
  pool.release(a.id);
  pool.release(a.id);  // twice is harmless, and gives back nothing more
  Grant b = must(pool, share(600));
  ASSERT_EQ(b.placement.notes.size(), 1u);
  EXPECT_NE(b.placement.notes[0].find("the first share of it"), std::string::npos);
  EXPECT_TRUE(not_now(pool, share(600)));
}

TEST(PoolShare, AShareIsOnOneNode) {
  Pool pool({gpu_node("n1", 2, 0), gpu_node("n2", 2, 1)});
  Grant a = must(pool, share(500, 2));
  EXPECT_EQ(a.placement.nodes, std::vector<std::string>{"n2"});
  // Two tasks of one core: they fit n2's two cores, never split across nodes.
  auto never = pool.grant(share(500, 3));
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.error().message().find("a share of one GPU: "), std::string::npos)
      << never.error().message();
}

TEST(PoolShare, NoGpuAnywhereIsRefused) {
  Pool pool({gpu_node("n1", 4, 0)});
  auto g = pool.grant(share(500));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), Errc::kRefused);
  EXPECT_NE(g.error().message().find("GPU"), std::string::npos) << g.error().message();
}

TEST(PoolShare, MalformedSharesAreRefused) {
  Pool pool({gpu_node("n1", 4, 2)});
  Request both = share(500);
  both.gpus = 1;
  Request many_nodes = share(500, 2);
  many_nodes.nodes = 2;
  for (const Request& r : {share(1000), share(-1), both, many_nodes}) {
    auto g = pool.grant(r);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().code(), Errc::kInvalidInput) << g.error().message();
  }
  auto reserved = pool.reserve("r", share(500));
  ASSERT_FALSE(reserved.ok());
  EXPECT_NE(reserved.error().message().find("whole GPUs"), std::string::npos);
  EXPECT_EQ(pool.held(), 0u);
}

}  // namespace
}  // namespace berth::place
