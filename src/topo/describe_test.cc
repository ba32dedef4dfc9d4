#include "topo/describe.h"

#include <gtest/gtest.h>

#include "topo/catalog.h"
#include "topo/fake_tree_for_test.h"
#include "util/idset.h"

namespace berth::topo {
namespace {

using testing::FakeTree;
using testing::range;

// A whole Aurora node as a job sees it: its CPUs, six two-tile GPUs, no cgroup limit.
void aurora_node(const FakeTree& t) {
  t.cpus(range(0, 207), [](int c) { return std::vector<int>{c % 104, c % 104 + 104}; });
  for (int c = 0; c < 6; ++c) {
    std::string card = "/sys/class/drm/card" + std::to_string(c);
    t.write(card + "/device/vendor", "0x8086\n");
    t.mkdir(card + "/gt/gt0");
    t.mkdir(card + "/gt/gt1");
  }
  t.write("/proc/meminfo", "MemTotal:       1189455872 kB\n");
}

TEST(Describe, AnAuroraNodeWithItsMachineDescription) {
  FakeTree t;
  aurora_node(t);
  auto catalog = Catalog::built_in();
  ASSERT_TRUE(catalog.ok());
  const MachineDescription* aurora = catalog->find("aurora");
  ASSERT_NE(aurora, nullptr);

  auto reader = make_cpu_reader(t.root(), idset::parse_ids("1-51,53-103,105-155,157-207").value());
  Env env;
  env.set("ZE_AFFINITY_MASK", "0,1");
  // Cards, not tiles: in Level Zero's default (flat) hierarchy "0,1" would be two tiles.
  env.set("ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE");
  auto n = describe(*reader, env, DescribeOptions{t.root(), aurora->configured_cores()});
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(idset::encode_ids(n->usable_core_ids), "1-51,53-103");
  EXPECT_EQ(n->threads_per_core, 2);
  EXPECT_EQ(n->configured_cores, 102);
  EXPECT_EQ(n->core_basis, CoreBasis::kAffinity);
  EXPECT_NE(n->cores_provenance.find("--affinity"), std::string::npos);
  EXPECT_EQ(n->gpus.vendor, GpuVendor::kIntel);
  EXPECT_EQ(n->gpus.ids, (std::vector<std::string>{"0.0", "0.1", "1.0", "1.1"}));
  EXPECT_EQ(n->gpus.provenance, "env ZE_AFFINITY_MASK");
  EXPECT_EQ(n->gpus.node_count, 12);
  // The kernel's figure, reported as what it is.
  EXPECT_EQ(n->memory.mb, 1161578);
  EXPECT_EQ(n->memory.source, MemorySource::kKernel);
  ASSERT_EQ(n->diagnostics.size(), 1u);
  EXPECT_NE(n->diagnostics[0].find("MemTotal"), std::string::npos);
}

TEST(Describe, CollectsEveryReadersDiagnostics) {
  FakeTree t;
  t.cpus(range(0, 7), [](int c) { return std::vector<int>{c}; });
  auto reader = make_cpu_reader(t.root(), std::vector<int>{0, 1, 2, 9});
  auto n = describe(*reader, Env(), DescribeOptions{t.root(), 16});
  ASSERT_TRUE(n.ok()) << n.error().message();
  // 9 is not online; 3 cores is fewer than half of 16 (the node's 8 are used); no
  // memory source at all.
  EXPECT_EQ(n->core_basis, CoreBasis::kNodeOnline);
  EXPECT_EQ(idset::encode_ids(n->usable_core_ids), "0-7");
  EXPECT_EQ(n->affinity_cores, 3);
  EXPECT_GE(n->diagnostics.size(), 4u);
  EXPECT_FALSE(n->memory.mb);
}

TEST(Describe, AFailingReaderFailsTheDescription) {
  FakeTree t;
  t.cpus(range(0, 1), [](int c) { return std::vector<int>{c}; });
  t.write("/proc/meminfo", "MemTotal: x kB\n");
  auto reader = make_cpu_reader(t.root(), std::nullopt);
  auto n = describe(*reader, Env(), DescribeOptions{t.root(), std::nullopt});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message().find("/proc/meminfo under"), std::string::npos);
}

TEST(Describe, ThisNode) {
  auto reader = make_cpu_reader("/", std::nullopt);
  auto n = describe(*reader, Env(), DescribeOptions{});
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_FALSE(n->usable_core_ids.empty());
  EXPECT_GE(n->threads_per_core, 1);
  EXPECT_EQ(n->cores_provenance.rfind("hwloc", 0), 0u);
  EXPECT_TRUE(n->memory.mb) << n->memory.provenance;
}

TEST(Describe, ReaderChoice) {
  EXPECT_NE(dynamic_cast<HwlocCpuReader*>(make_cpu_reader("/", std::nullopt).get()), nullptr);
  EXPECT_NE(dynamic_cast<SysfsCpuReader*>(make_cpu_reader("/", std::vector<int>{0}).get()),
            nullptr);
  EXPECT_NE(dynamic_cast<SysfsCpuReader*>(make_cpu_reader("/tmp/x", std::nullopt).get()), nullptr);
}

}  // namespace
}  // namespace berth::topo
