#include "place/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace berth::place {
namespace {

// Core ids lo..hi, inclusive.
std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A node with GPU ids "0".."gpus-1".
PoolNode node(std::string name, std::vector<int> cores, int gpus = 0,
              std::optional<int64_t> memory_mb = std::nullopt) {
  PoolNode n;
  n.name = std::move(name);
  n.cores = std::move(cores);
  for (int g = 0; g < gpus; ++g) n.gpu_ids.push_back(std::to_string(g));
  n.memory_mb = memory_mb;
  return n;
}

Request req(int tasks, int cpus_per_task = 1, int gpus = 0) {
  Request r;
  r.tasks = tasks;
  r.cpus_per_task = cpus_per_task;
  r.gpus = gpus;
  return r;
}

Request with_nodes(Request r, int nodes) {
  r.nodes = nodes;
  return r;
}

Request with_memory(Request r, int64_t mb) {
  r.memory_mb = mb;
  return r;
}

Request from(Request r, std::string reservation) {
  r.reservation = std::move(reservation);
  return r;
}

// The grant for `r`, or nullopt with a test failure when there is none.
std::optional<Grant> must_grant(Pool& pool, const Request& r) {
  auto g = pool.grant(r);
  if (!g.ok()) {
    ADD_FAILURE() << "grant refused: " << g.error().message();
    return std::nullopt;
  }
  if (!g->has_value()) ADD_FAILURE() << "grant answered not now";
  return *g;
}

// Whether `r` is answered "not now" (no error, no grant).
bool not_now(Pool& pool, const Request& r) {
  auto g = pool.grant(r);
  return g.ok() && !g->has_value();
}

std::vector<std::vector<int>> all_free(const Pool& pool) {
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < pool.nodes().size(); ++i) out.push_back(pool.free_cores(i));
  return out;
}

std::vector<int> task_counts(const Placement& p, int cpus_per_task) {
  std::vector<int> out;
  for (const auto& c : p.cores) out.push_back(static_cast<int>(c.size()) / cpus_per_task);
  return out;
}

TEST(Pool, GrantIdsIncreaseFromOne) {
  Pool pool({node("a", range(0, 7))});
  auto g1 = must_grant(pool, req(1));
  auto g2 = must_grant(pool, req(1));
  ASSERT_TRUE(g1 && g2);
  EXPECT_EQ(g1->id, 1u);
  EXPECT_EQ(g2->id, 2u);
  pool.release(g1->id);
  auto g3 = must_grant(pool, req(1));
  ASSERT_TRUE(g3);
  EXPECT_EQ(g3->id, 3u);  // never reused
  EXPECT_EQ(pool.held(), 2u);
}

TEST(Pool, APlacementNamesItsNodesGpuVariable) {
  PoolNode gpu = node("a", range(0, 3), 2);
  gpu.gpu_variable = "ROCR_VISIBLE_DEVICES";
  Pool pool({gpu});
  auto g = must_grant(pool, req(1, 1, 1));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->placement.gpu_ids, (std::vector<std::string>{"0"}));
  EXPECT_EQ(g->placement.gpu_variable, "ROCR_VISIBLE_DEVICES");
  // A placement with no GPU on that node still names the variable: its "none".
  auto none = must_grant(pool, req(1));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->placement.gpu_ids.empty());
  EXPECT_EQ(none->placement.gpu_variable, "ROCR_VISIBLE_DEVICES");
}

TEST(Pool, CoresFollowTheirGpu) {
  // Two sockets: GPU "0" next to cores 4-7, GPU "1" next to cores 0-3.
  PoolNode n = node("a", range(0, 7), 2);
  n.gpu_devices.resize(2);
  n.gpu_devices[0].local_cores = {4, 5, 6, 7};
  n.gpu_devices[1].local_cores = {0, 1, 2, 3};
  Pool pool({n});
  auto first = must_grant(pool, req(1, 2, 1));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->placement.gpu_ids, (std::vector<std::string>{"0"}));
  EXPECT_EQ(first->placement.cores[0], (std::vector<int>{4, 5}));
  EXPECT_TRUE(first->placement.notes.empty());
  auto second = must_grant(pool, req(1, 2, 1));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->placement.gpu_ids, (std::vector<std::string>{"1"}));
  EXPECT_EQ(second->placement.cores[0], (std::vector<int>{0, 1}));
  // A CPU-only grant takes the lowest free cores, as ever.
  auto cpu = must_grant(pool, req(1, 2));
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->placement.cores[0], (std::vector<int>{2, 3}));
  pool.release(second->id);
  // GPU "1" again, but only its cores 0-1 are free: two more come from elsewhere, said.
  auto third = must_grant(pool, req(1, 4, 1));
  ASSERT_TRUE(third);
  EXPECT_EQ(third->placement.gpu_ids, (std::vector<std::string>{"1"}));
  EXPECT_EQ(third->placement.cores[0], (std::vector<int>{0, 1, 6, 7}));
  ASSERT_EQ(third->placement.notes.size(), 1u);
  EXPECT_NE(third->placement.notes[0].find("2 of its 4 core(s) on a are not next to its GPU(s) "
                                           "(whose cores are 0-3)"),
            std::string::npos)
      << third->placement.notes[0];
}

TEST(Pool, GrantsAreDisjoint) {
  Pool pool({node("a", range(0, 7), 4), node("b", range(0, 7), 4)});
  std::set<std::pair<std::string, int>> cores;
  std::set<std::pair<std::string, std::string>> gpus;
  int granted = 0;
  while (true) {
    auto g = pool.grant(req(1, 2, 1));
    ASSERT_TRUE(g.ok()) << g.error().message();
    if (!g->has_value()) break;
    const Placement& p = (*g)->placement;
    ASSERT_EQ(p.nodes.size(), 1u);
    for (int c : p.cores[0]) EXPECT_TRUE(cores.insert({p.nodes[0], c}).second) << c;
    for (const auto& id : p.gpu_ids) EXPECT_TRUE(gpus.insert({p.nodes[0], id}).second) << id;
    ASSERT_LT(++granted, 100);
  }
  EXPECT_EQ(granted, 8);
  EXPECT_EQ(cores.size(), 16u);
  EXPECT_EQ(gpus.size(), 8u);
  EXPECT_TRUE(pool.free_cores(0).empty());
  EXPECT_TRUE(pool.free_cores(1).empty());
}

// One grant into a fresh pool: which nodes, and how many tasks on each.
struct ShapeCase {
  const char* name;
  std::vector<PoolNode> nodes;
  Request request;
  std::vector<std::string> want_nodes;
  std::vector<int> want_tasks;  // per node; each node's cores are exactly tasks x cpus
  std::vector<std::string> want_gpu_ids;
};

void check_shapes(const std::vector<ShapeCase>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Pool pool(c.nodes);
    auto g = must_grant(pool, c.request);
    if (!g) continue;
    const Placement& p = g->placement;
    EXPECT_EQ(p.nodes, c.want_nodes);
    ASSERT_EQ(p.cores.size(), p.nodes.size());
    EXPECT_EQ(task_counts(p, c.request.cpus_per_task), c.want_tasks);
    for (const auto& cores : p.cores) {
      EXPECT_EQ(cores.size() % static_cast<size_t>(c.request.cpus_per_task), 0u);
      EXPECT_TRUE(std::is_sorted(cores.begin(), cores.end()));
    }
    // The renderers place tasks by filling each node in turn; that must land the
    // same tasks on the same nodes as the pool meant.
    auto fill = fill_nodes_in_turn(p, c.request.tasks, c.request.cpus_per_task);
    ASSERT_TRUE(fill.ok()) << fill.error().message();
    EXPECT_EQ(*fill, c.want_tasks);
    EXPECT_EQ(p.gpus, c.request.gpus);
    EXPECT_EQ(p.gpu_ids, c.want_gpu_ids);
  }
}

TEST(Pool, ChoosesFewestNodesLowestFirst) {
  check_shapes({
      {"one node fits: the first",
       {node("a", range(0, 3)), node("b", range(0, 3))},
       req(4),
       {"a"},
       {4},
       {}},
      {"skips a node too small",
       {node("a", range(0, 1)), node("b", range(0, 3)), node("c", range(0, 3))},
       req(4),
       {"b"},
       {4},
       {}},
      {"fewest beats lowest",
       {node("a", range(0, 1)), node("b", range(0, 1)), node("c", range(0, 7))},
       req(4),
       {"c"},
       {4},
       {}},
      {"two nodes, the lowest pair that holds them",
       {node("a", range(0, 1)), node("b", range(0, 3)), node("c", range(0, 3))},
       req(6),
       {"a", "b"},
       {2, 4},
       {}},
      {"cpus per task leave cores over",
       {node("a", range(0, 7)), node("b", range(0, 7))},
       req(4, 3),
       {"a", "b"},
       {2, 2},
       {}},
      {"a GPU node over a lower one without",
       {node("a", range(0, 7)), node("b", range(0, 7), 2)},
       req(1, 1, 2),
       {"b"},
       {1},
       {"0", "1"}},
      {"GPUs force a second node, which still gets a task",
       {node("a", range(0, 7), 2), node("b", range(0, 7), 2)},
       req(2, 1, 4),
       {"a", "b"},
       {1, 1},
       {"0", "1", "0", "1"}},
      // Tasks alone would take a+c, GPUs alone c; only b+c has both.
      {"cores and GPUs traded off across nodes",
       {node("a", range(0, 7)), node("b", range(0, 1), 2), node("c", range(0, 7), 2)},
       req(10, 1, 4),
       {"b", "c"},
       {2, 8},
       {"0", "1", "0", "1"}},
      {"one node when it has both",
       {node("a", range(0, 7)), node("b", range(0, 1), 2), node("c", range(0, 7), 2)},
       req(8, 1, 2),
       {"c"},
       {8},
       {"0", "1"}},
  });
}

TEST(Pool, ExactlyNNodes) {
  std::vector<PoolNode> three = {node("a", range(0, 7)), node("b", range(0, 7)),
                                 node("c", range(0, 7))};
  check_shapes({
      // Each node keeps one task back for every node after it, so none runs empty.
      {"two nodes for four tasks", three, with_nodes(req(4), 2), {"a", "b"}, {3, 1}, {}},
      {"one task each", three, with_nodes(req(3), 3), {"a", "b", "c"}, {1, 1, 1}, {}},
      {"one node", three, with_nodes(req(8), 1), {"a"}, {8}, {}},
      {"spills when full", three, with_nodes(req(12, 2), 3), {"a", "b", "c"}, {4, 4, 4}, {}},
      {"skips a node too small for a task",
       {node("a", range(0, 1)), node("b", range(0, 7)), node("c", range(0, 7))},
       with_nodes(req(2, 4), 2),
       {"b", "c"},
       {1, 1},
       {}},
  });
}

// The lowest set of the fewest nodes (or of exactly r.nodes) that holds `r`, found by
// trying every set; nullopt when none does.
std::optional<std::vector<std::string>> exhaustive_choice(const std::vector<PoolNode>& nodes,
                                                          const Request& r) {
  const size_t n = nodes.size();
  std::optional<std::vector<size_t>> best;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<size_t> set;
    int64_t tasks = 0;
    int64_t gpus = 0;
    bool usable = true;
    for (size_t i = 0; i < n; ++i) {
      if (!(mask & (1u << i))) continue;
      set.push_back(i);
      const int64_t t = static_cast<int64_t>(nodes[i].cores.size()) / r.cpus_per_task;
      const bool memory_ok =
          !r.memory_mb || !nodes[i].memory_mb || *nodes[i].memory_mb >= *r.memory_mb;
      usable = usable && t >= 1 && memory_ok;
      tasks += t;
      gpus += static_cast<int64_t>(nodes[i].gpu_ids.size());
    }
    if (!usable || tasks < r.tasks || gpus < r.gpus) continue;
    if (set.size() > static_cast<size_t>(r.tasks)) continue;
    if (r.nodes && set.size() != static_cast<size_t>(*r.nodes)) continue;
    if (!best || set.size() < best->size() || (set.size() == best->size() && set < *best)) {
      best = set;
    }
  }
  if (!best) return std::nullopt;
  std::vector<std::string> names;
  for (size_t i : *best) names.push_back(nodes[i].name);
  return names;
}

TEST(Pool, ChoiceMatchesExhaustiveSearch) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 300; ++round) {
    std::vector<PoolNode> nodes;
    const int n = pick(1, 6);
    for (int i = 0; i < n; ++i) {
      std::optional<int64_t> memory;
      if (pick(0, 2) == 0) memory = pick(1, 4) * 100;
      nodes.push_back(node("n" + std::to_string(i), range(0, pick(0, 7)), pick(0, 3), memory));
    }
    Request r = req(pick(1, 12), pick(1, 3), pick(0, 3) == 0 ? 0 : pick(1, 8));
    if (pick(0, 3) == 0) r.nodes = pick(1, 4);
    if (pick(0, 3) == 0) r.memory_mb = pick(1, 4) * 100;
    SCOPED_TRACE(testing::Message() << "round " << round);
    Pool pool(nodes);
    auto g = pool.grant(r);
    auto want = exhaustive_choice(nodes, r);
    if (!want) {
      // Nothing is held, so what does not fit now never fits.
      ASSERT_FALSE(g.ok());
      EXPECT_EQ(g.error().code(), Errc::kRefused);
      continue;
    }
    ASSERT_TRUE(g.ok()) << g.error().message();
    ASSERT_TRUE(g->has_value());
    EXPECT_EQ((*g)->placement.nodes, *want);
    auto fill = fill_nodes_in_turn((*g)->placement, r.tasks, r.cpus_per_task);
    ASSERT_TRUE(fill.ok()) << fill.error().message();
    EXPECT_EQ(*fill, task_counts((*g)->placement, r.cpus_per_task));
    EXPECT_EQ((*g)->placement.gpu_ids.size(), static_cast<size_t>(r.gpus));
  }
}

TEST(Pool, LargeLaunchesAcrossManyNodes) {
  // Large enough that the exact choice gives way to the first nodes in order.
  std::vector<PoolNode> nodes;
  for (int i = 0; i < 200; ++i) nodes.push_back(node("n" + std::to_string(i), range(0, 7), 4));
  Pool pool(nodes);
  auto g = must_grant(pool, req(200, 1, 400));  // GPUs need 100 nodes
  ASSERT_TRUE(g);
  ASSERT_EQ(g->placement.nodes.size(), 100u);
  EXPECT_EQ(g->placement.nodes.front(), "n0");
  EXPECT_EQ(g->placement.nodes.back(), "n99");
  auto fill = fill_nodes_in_turn(g->placement, 200, 1);
  ASSERT_TRUE(fill.ok()) << fill.error().message();
  auto h = must_grant(pool, req(800));  // the other 100 nodes, all their cores
  ASSERT_TRUE(h);
  EXPECT_EQ(h->placement.nodes.size(), 100u);
  EXPECT_EQ(h->placement.nodes.front(), "n100");
}

TEST(Pool, MultiNodeGrantsFillNodesInTurnAfterEarlierGrants) {
  Pool pool({node("a", range(0, 7)), node("b", range(0, 7)), node("c", range(0, 7))});
  auto first = must_grant(pool, req(3, 2));  // a: 0-5
  ASSERT_TRUE(first);
  EXPECT_EQ(first->placement.nodes, std::vector<std::string>{"a"});
  // 5 tasks of 2: a has room for one, so it takes a and b, a's last two cores first.
  auto second = must_grant(pool, req(5, 2));
  ASSERT_TRUE(second);
  const Placement& p = second->placement;
  EXPECT_EQ(p.nodes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.cores, (std::vector<std::vector<int>>{{6, 7}, range(0, 7)}));
  auto fill = fill_nodes_in_turn(p, 5, 2);
  ASSERT_TRUE(fill.ok()) << fill.error().message();
  EXPECT_EQ(*fill, (std::vector<int>{1, 4}));
  EXPECT_TRUE(p.validate().ok());
}

TEST(Pool, NonContiguousCoreIds) {
  // Aurora: core 0 and core 52 are kept for the system.
  const std::vector<int> aurora = concat(range(1, 51), range(53, 103));
  Pool pool({node("x1", aurora), node("x2", aurora)});
  auto g = must_grant(pool, req(1, 52));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->placement.cores[0], concat(range(1, 51), {53}));
  EXPECT_EQ(pool.free_cores(0), range(54, 103));
  // 50 cores are left on x1, room for one task of 40; x2 takes the other two, and
  // its cores step over 52.
  auto h = must_grant(pool, req(3, 40));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->placement.nodes, (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(h->placement.cores,
            (std::vector<std::vector<int>>{range(54, 93), concat(range(1, 51), range(53, 81))}));
  EXPECT_EQ(pool.free_cores(0), range(94, 103));
  EXPECT_EQ(pool.free_cores(1), range(82, 103));
}

TEST(Pool, CoreIdsAreSortedAndDeduplicated) {
  PoolNode n = node("a", {3, 1, 2, 1, 0});
  n.gpu_ids = {"1", "0", "1"};
  Pool pool({n});
  EXPECT_EQ(pool.nodes()[0].cores, range(0, 3));
  EXPECT_EQ(pool.nodes()[0].gpu_ids, (std::vector<std::string>{"1", "0"}));
  EXPECT_EQ(pool.free_cores(0), range(0, 3));
  auto g = must_grant(pool, req(4, 1, 2));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->placement.cores[0], range(0, 3));
  EXPECT_TRUE(not_now(pool, req(1)));
}

TEST(Pool, GpuTotalAndIds) {
  // Intel GPUs are named by tile in ZE_AFFINITY_MASK's syntax; ids are taken in the
  // node's order.
  PoolNode n = node("a", range(0, 7));
  n.gpu_ids = {"0.0", "0.1", "1.0", "1.1"};
  Pool pool({n});
  auto none = must_grant(pool, req(1));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->placement.gpus, 0);
  EXPECT_TRUE(none->placement.gpu_ids.empty());
  auto two = must_grant(pool, req(1, 1, 2));
  auto one = must_grant(pool, req(1, 1, 1));
  ASSERT_TRUE(two && one);
  EXPECT_EQ(two->placement.gpus, 2);
  EXPECT_EQ(two->placement.gpu_ids, (std::vector<std::string>{"0.0", "0.1"}));
  EXPECT_EQ(one->placement.gpu_ids, (std::vector<std::string>{"1.0"}));
  EXPECT_TRUE(not_now(pool, req(1, 1, 2)));
  pool.release(two->id);
  auto three = must_grant(pool, req(1, 1, 3));
  ASSERT_TRUE(three);
  EXPECT_EQ(three->placement.gpu_ids, (std::vector<std::string>{"0.0", "0.1", "1.1"}));
  EXPECT_TRUE(three->placement.validate().ok());
}

TEST(Pool, AccountsMemoryPerNode) {
  Pool pool({node("a", range(0, 7), 0, 1000), node("b", range(0, 7))});
  auto g1 = must_grant(pool, with_memory(req(1), 600));
  ASSERT_TRUE(g1);
  EXPECT_EQ(g1->placement.nodes[0], "a");
  EXPECT_EQ(g1->memory_mb, std::optional<int64_t>(600));
  // a has 400 MB left; b has no figure, so memory there is not limited.
  auto g2 = must_grant(pool, with_memory(req(1), 600));
  auto g3 = must_grant(pool, with_memory(req(1), 100000));
  ASSERT_TRUE(g2 && g3);
  EXPECT_EQ(g2->placement.nodes[0], "b");
  EXPECT_EQ(g3->placement.nodes[0], "b");
  auto g4 = must_grant(pool, with_memory(req(1), 400));  // exactly what a has left
  ASSERT_TRUE(g4);
  EXPECT_EQ(g4->placement.nodes[0], "a");
  // A request that states no memory is not held to any.
  auto g5 = must_grant(pool, req(1));
  ASSERT_TRUE(g5);
  EXPECT_EQ(g5->placement.nodes[0], "a");
  EXPECT_FALSE(g5->memory_mb);
  // Per node: two nodes of 600 need 600 on each.
  EXPECT_TRUE(not_now(pool, with_memory(with_nodes(req(2), 2), 600)));
  pool.release(g1->id);
  auto g6 = must_grant(pool, with_memory(with_nodes(req(2), 2), 600));
  ASSERT_TRUE(g6);
  EXPECT_EQ(g6->placement.nodes, (std::vector<std::string>{"a", "b"}));
}

TEST(Pool, NotNowThenFitsAfterRelease) {
  Pool pool({node("a", range(0, 3), 1)});
  auto all = must_grant(pool, req(4, 1, 1));
  ASSERT_TRUE(all);
  EXPECT_TRUE(not_now(pool, req(1)));
  EXPECT_TRUE(not_now(pool, req(1, 1, 1)));
  pool.release(all->id);
  auto g = must_grant(pool, req(1, 1, 1));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->placement.cores[0], std::vector<int>{0});
}

TEST(Pool, NeverFitsNamesTheShortResource) {
  struct Case {
    const char* name;
    Request request;
    std::vector<const char*> want;  // each in the message
  } cases[] = {
      {"cpus per task", req(1, 9), {"9 cpus per task", "the largest node has 8 cores"}},
      {"tasks", req(17), {"17 tasks", "the pool holds 16"}},
      {"GPUs for one task", req(1, 1, 3), {"3 GPUs", "the largest node has 2"}},
      {"GPUs in all", req(4, 1, 5), {"5 GPUs", "has 4"}},
      {"GPUs on one node", with_nodes(req(4, 1, 3), 1), {"3 GPUs on 1 node"}},
      {"memory", with_memory(req(1), 2000), {"2000 MB per node", "the largest node has 1000 MB"}},
      {"nodes", with_nodes(req(3), 3), {"3 nodes", "the pool has 2"}},
      {"nodes for tasks", with_nodes(req(1), 2), {"every node needs at least one task"}},
      {"tasks on exact nodes",
       with_nodes(req(9), 1),
       {"9 tasks of 1 cpus on 1 node;", "the largest node holds 8"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Pool pool({node("a", range(0, 7), 2, 1000), node("b", range(0, 7), 2, 1000)});
    auto g = pool.grant(c.request);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().code(), Errc::kRefused);
    for (const char* w : c.want) {
      EXPECT_NE(g.error().message().find(w), std::string::npos) << g.error().message();
    }
  }
}

TEST(Pool, NeverFitsIsJudgedAgainstAnEmptyPoolNotTheFreeOne) {
  Pool pool({node("a", range(0, 7), 2)});
  auto held = must_grant(pool, req(7, 1, 2));
  ASSERT_TRUE(held);
  EXPECT_TRUE(not_now(pool, req(8, 1, 2)));  // fits once `held` goes
  auto g = pool.grant(req(9));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), Errc::kRefused);
}

TEST(Pool, RejectsMalformedRequests) {
  struct Case {
    const char* name;
    Request request;
    const char* want;
  } cases[] = {
      {"no tasks", req(0), "tasks"},
      {"negative tasks", req(-1), "tasks"},
      {"no cpus", req(1, 0), "cpus per task"},
      {"negative GPUs", req(1, 1, -1), "gpus"},
      {"no nodes", with_nodes(req(1), 0), "nodes"},
      {"no memory", with_memory(req(1), 0), "memory"},
      {"negative memory", with_memory(req(1), -5), "memory"},
      {"unknown reservation", from(req(1), "nope"), "reservation 'nope'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Pool pool({node("a", range(0, 7))});
    auto g = pool.grant(c.request);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().code(), Errc::kInvalidInput);
    EXPECT_NE(g.error().message().find(c.want), std::string::npos) << g.error().message();
    EXPECT_EQ(pool.held(), 0u);
  }
}

TEST(Pool, FailedGrantLeavesPoolUnchanged) {
  Pool pool({node("a", range(0, 7), 2, 1000), node("b", range(0, 7), 2, 1000)});
  auto g1 = must_grant(pool, with_memory(req(6, 1, 1), 500));
  auto g2 = must_grant(pool, req(3));
  ASSERT_TRUE(g1 && g2);
  const auto before = all_free(pool);
  const size_t held = pool.held();

  const Request failing[] = {
      req(12),                                  // not now: 7 cores are free
      with_memory(with_nodes(req(2), 2), 600),  // not now: a has only 500 MB left
      req(4, 1, 4),                             // not now: 3 GPUs are free
      req(17),                                  // never
      with_memory(req(1), 2000),                // never
      req(0),                                   // malformed
      from(req(1), "nope"),                     // malformed
  };
  for (const auto& r : failing) {
    auto g = pool.grant(r);
    EXPECT_FALSE(g.ok() && g->has_value());
    EXPECT_EQ(all_free(pool), before);
    EXPECT_EQ(pool.held(), held);
  }
  // Nothing was half-taken: what was free is still all grantable, memory included,
  // and the failures used up no id.
  auto g3 = must_grant(pool, with_memory(with_nodes(req(7, 1, 3), 2), 500));
  ASSERT_TRUE(g3);
  EXPECT_EQ(g3->id, 3u);
  EXPECT_TRUE(all_free(pool)[0].empty());
  EXPECT_TRUE(all_free(pool)[1].empty());
}

TEST(Pool, ReleaseIsIdempotent) {
  Pool pool({node("a", range(0, 3))});
  auto g1 = must_grant(pool, req(2));
  auto g2 = must_grant(pool, req(2));
  ASSERT_TRUE(g1 && g2);
  pool.release(g1->id);
  pool.release(g1->id);
  pool.release(0);
  pool.release(12345);
  EXPECT_EQ(pool.held(), 1u);
  EXPECT_EQ(pool.free_cores(0), range(0, 1));  // g2's cores stay held
  auto g3 = must_grant(pool, req(2));
  ASSERT_TRUE(g3);
  pool.release(g1->id);  // an old id does not release the grant now on its cores
  EXPECT_TRUE(pool.free_cores(0).empty());
}

TEST(Pool, ReservationIsWithheldFromGeneralGrants) {
  Pool pool({node("a", range(0, 7), 2), node("b", range(0, 7), 2)});
  auto res = pool.reserve("svc", req(1, 8, 2));
  ASSERT_TRUE(res.ok()) << res.error().message();
  EXPECT_EQ(res->id, 0u);
  EXPECT_EQ(res->placement.nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(pool.held(), 0u);
  EXPECT_TRUE(pool.free_cores(0).empty());

  auto g = must_grant(pool, req(8, 1, 2));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->placement.nodes, std::vector<std::string>{"b"});
  EXPECT_TRUE(not_now(pool, req(1)));
  // The whole pool would hold 16 tasks; what is not reserved holds 8.
  auto big = pool.grant(req(9));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), Errc::kRefused);
  EXPECT_NE(big.error().message().find("the unreserved pool holds 8"), std::string::npos)
      << big.error().message();
}

TEST(Pool, ReservationGrantsDrawOnlyFromIt) {
  Pool pool({node("a", range(0, 7)), node("b", range(0, 7))});
  auto res = pool.reserve("svc", req(4));
  ASSERT_TRUE(res.ok()) << res.error().message();
  EXPECT_EQ(res->placement.cores[0], range(0, 3));
  EXPECT_EQ(pool.free_cores(0), range(4, 7));

  auto r1 = must_grant(pool, from(req(2), "svc"));
  auto r2 = must_grant(pool, from(req(2), "svc"));
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->placement.cores[0], range(0, 1));
  EXPECT_EQ(r2->placement.cores[0], range(2, 3));
  EXPECT_TRUE(not_now(pool, from(req(1), "svc")));
  auto big = pool.grant(from(req(5), "svc"));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), Errc::kRefused);
  EXPECT_NE(big.error().message().find("reservation 'svc'"), std::string::npos)
      << big.error().message();
  // General grants never see the reserved cores.
  auto g = must_grant(pool, req(4));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->placement.nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(g->placement.cores[0], range(4, 7));
  EXPECT_EQ(pool.held(), 3u);
}

TEST(Pool, UnreserveRefusedWhileHeld) {
  Pool pool({node("a", range(0, 7))});
  ASSERT_TRUE(pool.reserve("svc", req(4)).ok());
  auto g = must_grant(pool, from(req(1), "svc"));
  ASSERT_TRUE(g);
  auto refused = pool.unreserve("svc");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), Errc::kRefused);
  EXPECT_EQ(pool.free_cores(0), range(4, 7));
  pool.release(g->id);
  EXPECT_TRUE(pool.unreserve("svc").ok());
  EXPECT_EQ(pool.free_cores(0), range(0, 7));
  EXPECT_TRUE(pool.unreserve("svc").ok());      // gone: harmless
  EXPECT_TRUE(pool.unreserve("unknown").ok());  // never was: harmless
  auto gone = pool.grant(from(req(1), "svc"));
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), Errc::kInvalidInput);
  EXPECT_TRUE(pool.reserve("svc", req(8)).ok());  // the name is free again
}

TEST(Pool, ReserveRefusals) {
  Pool pool({node("a", range(0, 7))});
  ASSERT_TRUE(pool.reserve("x", req(2)).ok());
  auto taken = pool.reserve("x", req(1));
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code(), Errc::kRefused);
  EXPECT_NE(taken.error().message().find("taken"), std::string::npos);

  auto never = pool.reserve("y", req(7));  // 6 cores are not reserved
  ASSERT_FALSE(never.ok());
  EXPECT_EQ(never.error().code(), Errc::kRefused);
  EXPECT_NE(never.error().message().find("reservation 'y': asks for 7 tasks"), std::string::npos)
      << never.error().message();

  auto g = must_grant(pool, req(6));
  ASSERT_TRUE(g);
  auto busy = pool.reserve("y", req(1));
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), Errc::kRefused);
  EXPECT_NE(busy.error().message().find("does not fit"), std::string::npos);

  EXPECT_EQ(pool.reserve("", req(1)).error().code(), Errc::kInvalidInput);
  EXPECT_EQ(pool.reserve("z", req(0)).error().code(), Errc::kInvalidInput);
  EXPECT_EQ(pool.reserve("z", from(req(1), "x")).error().code(), Errc::kInvalidInput);
}

TEST(Pool, ReservationMemory) {
  Pool pool({node("a", range(0, 7), 0, 1000)});
  // A reservation with a figure sets that much aside on each of its nodes.
  ASSERT_TRUE(pool.reserve("m", with_memory(req(1, 2), 600)).ok());
  auto never = pool.grant(with_memory(req(1), 500));
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.error().message().find("has 400 MB"), std::string::npos)
      << never.error().message();
  auto inside = must_grant(pool, from(with_memory(req(1), 600), "m"));
  ASSERT_TRUE(inside);
  EXPECT_TRUE(not_now(pool, from(with_memory(req(1), 1), "m")));
  auto general = must_grant(pool, with_memory(req(1), 400));
  ASSERT_TRUE(general);

  // One without a figure sets none aside: its grants draw on the node's unreserved
  // memory, which general grants share.
  Pool shared({node("a", range(0, 7), 0, 1000)});
  ASSERT_TRUE(shared.reserve("n", req(2)).ok());
  auto in_n = must_grant(shared, from(with_memory(req(1), 700), "n"));
  ASSERT_TRUE(in_n);
  EXPECT_TRUE(not_now(shared, with_memory(req(1), 400)));
  shared.release(in_n->id);
  EXPECT_TRUE(must_grant(shared, with_memory(req(1), 1000)));
}

// GPU ids are node-local and a placement lists them for all its nodes together, so
// tests that check GPUs across grants give every GPU an id naming its node.
PoolNode named_gpus(PoolNode n) {
  for (auto& id : n.gpu_ids) id = n.name + ":" + id;
  return n;
}

// Random grants and releases, some from a reservation, some that can never fit: after
// every step no core or GPU is held twice, and every core is exactly one of free, held
// by a general grant, or reserved.
TEST(Pool, RandomOpsKeepResourcesDisjoint) {
  std::vector<PoolNode> nodes = {named_gpus(node("n0", range(0, 7), 2, 4000)),
                                 named_gpus(node("n1", range(0, 15), 4)),
                                 node("n2", concat(range(1, 5), range(7, 12)), 0, 2000),
                                 named_gpus(node("n3", range(0, 3), 1, 1000))};
  Pool pool(nodes);
  auto res = pool.reserve("r", req(2, 2, 1));
  ASSERT_TRUE(res.ok()) << res.error().message();
  std::map<std::string, size_t> index;
  for (size_t n = 0; n < nodes.size(); ++n) index[nodes[n].name] = n;
  std::vector<std::set<int>> reserved(nodes.size());
  for (size_t i = 0; i < res->placement.nodes.size(); ++i) {
    reserved[index.at(res->placement.nodes[i])].insert(res->placement.cores[i].begin(),
                                                       res->placement.cores[i].end());
  }
  const std::set<std::string> reserved_gpus(res->placement.gpu_ids.begin(),
                                            res->placement.gpu_ids.end());

  std::mt19937 rng(20260923);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Held {
    Grant grant;
    Request request;
  };
  std::map<uint64_t, Held> held;
  std::vector<uint64_t> released;
  int granted = 0;
  for (int op = 0; op < 2000; ++op) {
    if (held.empty() || pick(0, 9) < 6) {
      Request r = req(pick(1, 6), pick(1, 3), pick(0, 9) < 7 ? 0 : pick(1, 3));
      if (pick(0, 4) == 0) r.nodes = pick(1, 3);
      if (pick(0, 3) == 0) r.memory_mb = pick(1, 15) * 100;
      if (pick(0, 4) == 0) r.reservation = "r";
      auto g = pool.grant(r);
      if (!g.ok()) {
        ASSERT_EQ(g.error().code(), Errc::kRefused) << g.error().message();
        continue;
      }
      if (!g->has_value()) continue;
      ++granted;
      const Placement& p = (*g)->placement;
      ASSERT_TRUE(!r.nodes || p.nodes.size() == static_cast<size_t>(*r.nodes));
      auto fill = fill_nodes_in_turn(p, r.tasks, r.cpus_per_task);
      ASSERT_TRUE(fill.ok()) << fill.error().message();
      ASSERT_EQ(*fill, task_counts(p, r.cpus_per_task));
      ASSERT_EQ(p.gpus, r.gpus);
      ASSERT_TRUE(p.validate().ok()) << p.validate().error().message();
      held.emplace((*g)->id, Held{**g, r});
    } else if (pick(0, 4) == 0) {
      // An id already released, or one never granted: nothing held may change.
      released.push_back(static_cast<uint64_t>(granted) + 1000);
      pool.release(released[static_cast<size_t>(pick(0, static_cast<int>(released.size()) - 1))]);
    } else {
      auto it = held.begin();
      std::advance(it, pick(0, static_cast<int>(held.size()) - 1));
      pool.release(it->first);
      released.push_back(it->first);
      held.erase(it);
    }

    ASSERT_EQ(pool.held(), held.size());
    // Per node, per core id: who has it. Flat tables keep 2000 checks cheap.
    enum : char { kNobody, kFree, kGeneral, kInside };
    std::vector<std::vector<char>> who(nodes.size(), std::vector<char>(16, kNobody));
    std::set<std::string> gpus;
    std::vector<int64_t> memory(nodes.size(), 0);
    for (const auto& [id, h] : held) {
      const Placement& p = h.grant.placement;
      const bool from_r = !h.request.reservation.empty();
      for (size_t i = 0; i < p.nodes.size(); ++i) {
        const size_t n = index.at(p.nodes[i]);
        for (int c : p.cores[i]) {
          ASSERT_EQ(who[n][c], kNobody) << "core " << c << " on " << p.nodes[i] << " held twice";
          who[n][c] = from_r ? kInside : kGeneral;
          ASSERT_EQ(reserved[n].count(c), from_r ? 1u : 0u) << "core " << c << " on " << n;
        }
        if (h.request.memory_mb) memory[n] += *h.request.memory_mb;
      }
      for (const auto& gpu : p.gpu_ids) {
        ASSERT_TRUE(gpus.insert(gpu).second) << "GPU " << gpu << " held twice";
        ASSERT_EQ(reserved_gpus.count(gpu), from_r ? 1u : 0u) << "GPU " << gpu;
        const std::string gpu_node = gpu.substr(0, gpu.find(':'));
        ASSERT_NE(std::find(p.nodes.begin(), p.nodes.end(), gpu_node), p.nodes.end());
      }
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      for (int c : pool.free_cores(n)) {
        ASSERT_EQ(who[n][c], kNobody) << "free and held: " << c;
        ASSERT_EQ(reserved[n].count(c), 0u) << "free and reserved: " << c;
        who[n][c] = kFree;
      }
      for (int c : reserved[n]) {
        if (who[n][c] == kNobody) who[n][c] = kInside;  // reserved, not held
      }
      for (int c = 0; c < 16; ++c) {
        const bool usable = std::binary_search(nodes[n].cores.begin(), nodes[n].cores.end(), c);
        ASSERT_EQ(who[n][c] != kNobody, usable) << "core " << c << " on " << nodes[n].name;
      }
      // The reservation set no memory aside, so all grants share each node's figure.
      if (nodes[n].memory_mb) {
        ASSERT_LE(memory[n], *nodes[n].memory_mb) << nodes[n].name;
      }
    }
  }
  EXPECT_GT(granted, 200);
  for (const auto& [id, h] : held) pool.release(id);
  EXPECT_TRUE(pool.unreserve("r").ok());
  for (size_t n = 0; n < nodes.size(); ++n) EXPECT_EQ(pool.free_cores(n), nodes[n].cores);
}

TEST(Pool, ConcurrentGrantsStayDisjoint) {
  std::vector<PoolNode> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(named_gpus(node("n" + std::to_string(i), range(0, 15), 4)));
  }
  Pool pool(nodes);
  std::mutex mu;                                          // guards `owner`
  std::map<std::pair<std::string, int>, uint64_t> owner;  // held cores
  std::set<std::string> gpu_owner;                        // held GPUs
  std::atomic<int> conflicts{0};
  std::atomic<int> grants{0};

  // Each thread makes its count of grants however the threads interleave: with a count
  // of attempts instead, a thread that runs while the others sit on the pool's cores
  // (one core, a loaded machine) is refused almost every time and the test proves
  // little. A refused thread gives back its oldest grant, so no four threads can each
  // hold part of the pool waiting for the rest.
  constexpr int kGrantsPerThread = 100;
  std::atomic<int> starved{0};
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::deque<Grant> mine;
    auto give_back_oldest = [&] {
      // Forget the cores before the pool frees them, or another thread could be
      // granted them and find them still marked.
      Grant g = mine.front();
      mine.pop_front();
      {
        std::lock_guard<std::mutex> lock(mu);
        for (size_t n = 0; n < g.placement.nodes.size(); ++n) {
          for (int c : g.placement.cores[n]) owner.erase({g.placement.nodes[n], c});
        }
        for (const auto& gpu : g.placement.gpu_ids) gpu_owner.erase(gpu);
      }
      pool.release(g.id);
    };
    int made = 0;
    for (int attempt = 0; made < kGrantsPerThread; ++attempt) {
      if (attempt == 100000) {
        ++starved;
        break;
      }
      if (mine.size() == 3) {
        give_back_oldest();
        continue;
      }
      auto g = pool.grant(req(pick(1, 6), pick(1, 4), pick(0, 2)));
      if (!g.ok() || !g->has_value()) {
        if (!mine.empty()) give_back_oldest();
        std::this_thread::yield();
        continue;
      }
      ++made;
      ++grants;
      std::lock_guard<std::mutex> lock(mu);
      const Placement& p = (*g)->placement;
      for (size_t n = 0; n < p.nodes.size(); ++n) {
        for (int c : p.cores[n]) {
          if (!owner.emplace(std::make_pair(p.nodes[n], c), (*g)->id).second) ++conflicts;
        }
      }
      for (const auto& gpu : p.gpu_ids) {
        if (!gpu_owner.insert(gpu).second) ++conflicts;
      }
      mine.push_back(**g);
    }
    while (!mine.empty()) give_back_oldest();
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back(worker, 100 + t);
  for (auto& t : threads) t.join();

  EXPECT_EQ(conflicts.load(), 0);
  EXPECT_EQ(starved.load(), 0);
  EXPECT_EQ(grants.load(), 4 * kGrantsPerThread);
  EXPECT_EQ(pool.held(), 0u);
  for (size_t n = 0; n < nodes.size(); ++n) EXPECT_EQ(pool.free_cores(n), range(0, 15));
}

TEST(Pool, WaitForReleaseWakesOnARelease) {
  Pool pool({node("a", range(0, 1))});
  auto first = pool.grant(req(2));
  ASSERT_TRUE(first.ok() && first->has_value());
  uint64_t seen = pool.releases();
  auto second = pool.grant(req(2));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->has_value());  // not now
  // Nothing given back: the wait times out.
  EXPECT_FALSE(pool.wait_for_release(seen, std::chrono::milliseconds(20)));
  // A release from another thread ends the wait, however long it was to be.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pool.release((*first)->id);
  });
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(pool.wait_for_release(seen, std::chrono::seconds(30)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  releaser.join();
  auto third = pool.grant(req(2));
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->has_value());
  // A release that came before the wait began is not missed: the count has moved.
  uint64_t before = pool.releases();
  pool.release((*third)->id);
  EXPECT_TRUE(pool.wait_for_release(before, std::chrono::milliseconds(0)));
  // Releasing what is not held moves nothing.
  uint64_t now = pool.releases();
  pool.release(12345);
  EXPECT_EQ(pool.releases(), now);
}

}  // namespace
}  // namespace berth::place
