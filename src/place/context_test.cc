// The Context every placing caller builds (the CLI's commands, the Python module): from
// an environment and options alone, with a fake node and no launcher run.
#include "place/context.h"

#include <gtest/gtest.h>

#include "topo/fake_tree_for_test.h"

namespace berth::place {
namespace {

using topo::testing::FakeTree;
using topo::testing::range;

// A probe that must not be asked: every test fakes the version or uses local.
class NoProbe : public VersionProbe {
 public:
  Result<std::string> run(const std::vector<std::string>& argv) override {
    ADD_FAILURE() << "probe asked: " << argv[0];
    return fail(Errc::kNotFound, "no probe");
  }
};

Env slurm_env() {
  Env e;
  e.set("PATH", "/usr/bin:/bin");
  e.set("SLURM_JOB_ID", "9");
  e.set("SLURM_JOB_NODELIST", "nid[001-004]");
  e.set("SLURM_TASKS_PER_NODE", "4(x4)");
  return e;
}

struct Node16 {
  FakeTree tree;
  Node16() {
    tree.cpus(range(0, 15), [](int c) { return std::vector<int>{c}; });
  }
};

Result<Context> build(const Env& env, MachineOptions m, const std::string& root,
                      AllocationOptions a = {}) {
  NoProbe probe;
  m.sysfs_root = root;
  return build_context(env, a, m, probe);
}

TEST(Context, BuildsFromAnEnvironmentAndOptions) {
  Node16 n;
  MachineOptions m;
  m.machine = "generic";  // cores detected: the affinity's, not a machine's count
  m.slurm_version = "25.11";
  m.affinity = "0-7";
  auto c = build(slurm_env(), m, n.tree.root());
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->allocation.owner, "slurm");
  EXPECT_EQ(c->machine->name, "generic");
  EXPECT_EQ(c->launcher.kind, topo::LauncherKind::kSrun);
  EXPECT_EQ(c->launcher_reason, "the allocation is Slurm's");
  EXPECT_EQ(c->node.usable_core_ids, range(0, 7));
  // Four slots per node: each node offers four of this node's usable cores.
  auto pool = c->pool_nodes();
  ASSERT_EQ(pool.size(), 4u);
  EXPECT_EQ(pool[0].name, "nid001");
  EXPECT_EQ(pool[0].cores, range(0, 3));
  EXPECT_EQ(c->usable_cores("nid004"), range(0, 3));
  EXPECT_TRUE(c->usable_cores("nid009").empty());
  EXPECT_TRUE(c->check_reachable({"nid001", "nid004"}).ok());
  auto j = machine_json(*c);
  EXPECT_EQ(j["machine"], "generic");
  EXPECT_EQ(j["placement_support"], "scheduler-enforced");
  EXPECT_EQ(j["node_count"], 4);
}

TEST(Context, NamedPlacementsAreCheckedAgainstTheAllocation) {
  Node16 n;
  MachineOptions m;
  m.machine = "pm-cpu";
  m.slurm_version = "25.11";
  auto c = build(slurm_env(), m, n.tree.root());
  ASSERT_TRUE(c.ok()) << c.error().message();

  auto all = c->named_placement({"nid001", "nid002"}, {});
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(all->cores, (std::vector<std::vector<int>>{range(0, 3), range(0, 3)}));
  auto same = c->named_placement({"nid001", "nid002"}, {{1, 2}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->cores, (std::vector<std::vector<int>>{{1, 2}, {1, 2}}));
  auto each = c->named_placement({"nid001", "nid002"}, {{0}, {3}});
  ASSERT_TRUE(each.ok());
  EXPECT_EQ(each->cores, (std::vector<std::vector<int>>{{0}, {3}}));

  auto outside = c->named_placement({"nid009"}, {});
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code(), Errc::kRefused);
  EXPECT_EQ(outside.error().message(),
            "node 'nid009' is not in the slurm allocation (nid[001-004])");
  auto core = c->named_placement({"nid001"}, {{7}});
  ASSERT_FALSE(core.ok());
  EXPECT_EQ(core.error().code(), Errc::kRefused);
  EXPECT_EQ(core.error().message(), "core 7 is not usable on node 'nid001' (usable: 0-3)");
  auto count = c->named_placement({"nid001", "nid002", "nid003"}, {{0}, {1}});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().code(), Errc::kInvalidInput);
  // No node named means this node, which this allocation does not hold.
  auto here = c->named_placement({}, {{0}});
  ASSERT_FALSE(here.ok());
  EXPECT_EQ(here.error().code(), Errc::kInvalidInput);
}

TEST(Context, RenderingJsonIsWhatPlacePrints) {
  Node16 n;
  MachineOptions m;
  m.machine = "pm-cpu";
  m.slurm_version = "25.11";
  auto c = build(slurm_env(), m, n.tree.root());
  ASSERT_TRUE(c.ok()) << c.error().message();
  auto p = c->named_placement({"nid001"}, {{0, 1}});
  ASSERT_TRUE(p.ok());
  LaunchSpec s = c->launch_spec(2, 1, 512, {"./a.out"});
  auto r = render(*c->machine, c->launcher, *p, s);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto j = rendering_json(*r, *p, s, c->launcher);
  EXPECT_EQ(j["mechanism"], "scheduler-enforced");
  EXPECT_EQ(j["memory_cap"], "enforced");
  EXPECT_EQ(j["memory_cap_mb"], 512);
  EXPECT_EQ(j["placement"]["cores"], std::vector<std::string>{"0-1"});
  EXPECT_EQ(j["argv"].back(), "./a.out");
  EXPECT_EQ(j["launcher"]["kind"], "srun");
}

TEST(Context, OptionsThatDoNotParseNameThemselves) {
  Node16 n;
  MachineOptions m;
  m.launcher = "aprun";
  auto bad = build(Env(), m, n.tree.root());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), Errc::kInvalidInput);
  EXPECT_NE(bad.error().message().find("--launcher"), std::string::npos);

  m.launcher = "local";
  m.slurm_version = "22.05";
  bad = build(Env(), m, n.tree.root());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "--slurm-version: the launcher is not srun");

  m = MachineOptions();
  m.affinity = "3-1";
  bad = build(Env(), m, n.tree.root());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message().rfind("--affinity: ", 0), 0u) << bad.error().message();

  AllocationOptions a;
  a.slurm_slots = "nodes";
  bad = build(slurm_env(), MachineOptions(), n.tree.root(), a);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--slurm-slots"), std::string::npos);
}

TEST(Context, TheLocalLauncherReachesThisNodeOnly) {
  Node16 n;
  AllocationOptions a;
  a.hosts = {"elsewhere:2"};
  MachineOptions m;
  m.launcher = "local";
  auto c = build(Env(), m, n.tree.root(), a);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->here(), "");
  auto reach = c->check_reachable({"elsewhere"});
  ASSERT_FALSE(reach.ok());
  EXPECT_EQ(reach.error().code(), Errc::kRefused);
}

}  // namespace
}  // namespace berth::place
