// Usable core ids on fake sysfs trees of the machines the policy was validated on, as
// their kernels number the cores, and the policy's edge cases from tables.
#include "topo/cores.h"

#include <gtest/gtest.h>

#include "topo/fake_tree_for_test.h"
#include "util/idset.h"

namespace berth::topo {
namespace {

using testing::FakeTree;
using testing::range;

std::vector<int> ids(const char* list) { return idset::parse_ids(list).value(); }

// Hyperthreads numbered `stride` apart: core c has threads c and c + stride.
std::function<std::vector<int>(int)> split_siblings(int stride) {
  return [stride](int c) { return std::vector<int>{c % stride, c % stride + stride}; };
}

struct MachineCase {
  const char* name;
  int threads;           // hardware threads online: 0..threads-1
  int stride;            // core c has threads c and c + stride
  std::string affinity;  // what the kernel allows a job
  int configured;        // cores_per_node
  std::string want;      // one id per physical core
};

// Frontier's affinity: ids 0-63 not divisible by 8, plus each + 64.
std::string frontier_affinity() {
  std::vector<int> a;
  for (int c = 0; c < 64; ++c) {
    if (c % 8 != 0) a.push_back(c);
  }
  for (int c = 0; c < 64; ++c) {
    if (c % 8 != 0) a.push_back(c + 64);
  }
  return idset::encode_ids(a);
}

TEST(UsableCores, KernelIdsOnMeasuredMachines) {
  const MachineCase cases[] = {
      {"Perlmutter CPU", 256, 128, "0-255", 128, "0-127"},
      // 0 and 52 are held back; PALS refuses a launch placed on 0.
      {"Aurora", 208, 104, "1-51,53-103,105-155,157-207", 102, "1-51,53-103"},
      {"Frontier", 128, 64, frontier_affinity(), 56,
       "1-7,9-15,17-23,25-31,33-39,41-47,49-55,57-63"},
  };
  for (const MachineCase& c : cases) {
    FakeTree t;
    t.cpus(range(0, c.threads - 1), split_siblings(c.stride));
    SysfsCpuReader reader(t.root(), ids(c.affinity.c_str()));
    auto reading = reader.read();
    ASSERT_TRUE(reading.ok()) << c.name << ": " << reading.error().message();
    CoreSelection s = select_cores(*reading, c.configured);
    EXPECT_EQ(idset::encode_ids(s.usable_core_ids), c.want) << c.name;
    EXPECT_EQ(s.usable_core_ids.size(), static_cast<size_t>(c.configured)) << c.name;
    EXPECT_EQ(s.threads_per_core, 2) << c.name;
    EXPECT_EQ(s.basis, CoreBasis::kAffinity) << c.name;
    EXPECT_TRUE(s.diagnostics.empty()) << c.name << ": " << s.diagnostics.front();
  }
}

TEST(UsableCores, InterleavedSiblingsGiveOneIdPerCore) {
  // Core c is threads 2c and 2c+1: numbering from zero would put two tasks on one core.
  for (const char* file : {"thread_siblings_list", "core_cpus_list"}) {
    FakeTree t;
    t.cpus(
        range(0, 15),
        [](int c) {
          return std::vector<int>{c & ~1, c | 1};
        },
        file);
    auto reading = SysfsCpuReader(t.root(), std::nullopt).read();
    ASSERT_TRUE(reading.ok()) << reading.error().message();
    CoreSelection s = select_cores(*reading, 8);
    EXPECT_EQ(s.usable_core_ids, (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14})) << file;
    EXPECT_EQ(s.threads_per_core, 2);
    EXPECT_TRUE(s.diagnostics.empty());
  }
}

TEST(UsableCores, CoreCpusListIsPreferredOverTheDeprecatedName) {
  FakeTree t;
  t.cpus(
      range(0, 3),
      [](int c) {
        return std::vector<int>{c & ~1, c | 1};
      },
      "core_cpus_list");
  // A stale thread_siblings_list that disagrees is not read.
  for (int c = 0; c < 4; ++c) {
    t.write("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/thread_siblings_list",
            std::to_string(c) + "\n");
  }
  auto reading = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_TRUE(reading.ok());
  EXPECT_EQ(select_cores(*reading, std::nullopt).usable_core_ids, (std::vector<int>{0, 2}));
}

TEST(UsableCores, KeepsTheLowestAllowedIdOfEachCore) {
  // Allowed only the upper sibling of each Perlmutter core: those are the ids.
  FakeTree t;
  t.cpus(range(0, 255), split_siblings(128));
  auto reading = SysfsCpuReader(t.root(), range(128, 255)).read();
  ASSERT_TRUE(reading.ok());
  CoreSelection s = select_cores(*reading, 128);
  EXPECT_EQ(idset::encode_ids(s.usable_core_ids), "128-255");
}

TEST(UsableCores, FewerThanConfiguredIsUsedAndReported) {
  FakeTree t;
  t.cpus(range(0, 255), split_siblings(128));
  auto reading = SysfsCpuReader(t.root(), ids("0-99,128-227")).read();
  ASSERT_TRUE(reading.ok());
  CoreSelection s = select_cores(*reading, 128);
  EXPECT_EQ(idset::encode_ids(s.usable_core_ids), "0-99");
  EXPECT_EQ(s.basis, CoreBasis::kAffinity);
  EXPECT_EQ(s.affinity_cores, 100);
  ASSERT_EQ(s.diagnostics.size(), 1u);
  EXPECT_NE(s.diagnostics[0].find("100 physical cores"), std::string::npos);
  EXPECT_NE(s.diagnostics[0].find("fewer than the 128 configured"), std::string::npos);
}

TEST(UsableCores, ExactlyHalfIsBelieved) {
  FakeTree t;
  t.cpus(range(0, 255), split_siblings(128));
  auto reading = SysfsCpuReader(t.root(), range(0, 63)).read();
  ASSERT_TRUE(reading.ok());
  CoreSelection s = select_cores(*reading, 128);
  EXPECT_EQ(idset::encode_ids(s.usable_core_ids), "0-63");
  EXPECT_EQ(s.basis, CoreBasis::kAffinity);
  EXPECT_EQ(s.diagnostics.size(), 1u);
}

TEST(UsableCores, FewerThanHalfIsNotBelievedAndTheNodeIsUsed) {
  // Bound to a corner of an Aurora node: numbering the allocation from that corner
  // would starve every launch.
  FakeTree t;
  t.cpus(range(0, 207), split_siblings(104));
  auto reading = SysfsCpuReader(t.root(), ids("1-8,105-112")).read();
  ASSERT_TRUE(reading.ok());
  CoreSelection s = select_cores(*reading, 102);
  EXPECT_EQ(s.basis, CoreBasis::kNodeOnline);
  EXPECT_EQ(s.affinity_cores, 8);
  // The node's online CPUs, one per core, held to the count.
  EXPECT_EQ(idset::encode_ids(s.usable_core_ids), "0-101");
  ASSERT_FALSE(s.diagnostics.empty());
  EXPECT_NE(s.diagnostics[0].find("fewer than half of the 102 configured: not believed"),
            std::string::npos)
      << s.diagnostics[0];
  EXPECT_NE(s.diagnostics[0].find("1-8"), std::string::npos);
}

TEST(UsableCores, FewerThanHalfWithNothingBetterIsNumbered) {
  CpuReading r;
  r.allowed = {3};
  r.online = {3};
  CoreSelection s = select_cores(r, 4);
  EXPECT_EQ(s.basis, CoreBasis::kNumbered);
  EXPECT_EQ(s.usable_core_ids, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(s.diagnostics.size(), 1u);
  EXPECT_NE(s.diagnostics[0].find("numbered 0-3"), std::string::npos);
}

TEST(UsableCores, MoreThanConfiguredIsACapAndNotReported) {
  FakeTree t;
  t.cpus(range(0, 255), split_siblings(128));
  auto reading = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_TRUE(reading.ok());
  CoreSelection s = select_cores(*reading, 16);
  EXPECT_EQ(idset::encode_ids(s.usable_core_ids), "0-15");
  EXPECT_TRUE(s.diagnostics.empty());
  EXPECT_EQ(s.affinity_cores, 128);
}

TEST(UsableCores, NothingConfiguredMeansNoCap) {
  FakeTree t;
  t.cpus(range(0, 255), split_siblings(128));
  auto reading = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_TRUE(reading.ok());
  EXPECT_EQ(select_cores(*reading, std::nullopt).usable_core_ids.size(), 128u);
  EXPECT_EQ(select_cores(*reading, 0).usable_core_ids.size(), 128u);
}

TEST(UsableCores, ANodeWithoutTopologyFilesHasNoSiblings) {
  FakeTree t;
  t.write("/sys/devices/system/cpu/online", "0-7\n");
  auto reading = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_TRUE(reading.ok());
  CoreSelection s = select_cores(*reading, 8);
  EXPECT_EQ(idset::encode_ids(s.usable_core_ids), "0-7");
  EXPECT_EQ(s.threads_per_core, 1);
  EXPECT_TRUE(s.diagnostics.empty());
}

TEST(UsableCores, UnevenThreadsPerCoreAreReported) {
  CpuReading r;
  r.allowed = {0, 1, 2};
  r.siblings = {{0, {0, 1}}, {1, {0, 1}}, {2, {2}}};
  CoreSelection s = select_cores(r, std::nullopt);
  EXPECT_EQ(s.usable_core_ids, (std::vector<int>{0, 2}));
  EXPECT_EQ(s.threads_per_core, 2);
  ASSERT_EQ(s.diagnostics.size(), 1u);
  EXPECT_NE(s.diagnostics[0].find("differ"), std::string::npos);
}

TEST(UsableCores, AHugeConfiguredCountIsBounded) {
  CpuReading r;
  r.allowed = {0};
  CoreSelection s = select_cores(r, 1 << 30);
  EXPECT_EQ(s.usable_core_ids.size(), static_cast<size_t>(idset::kMaxCpuId) + 1);
}

}  // namespace
}  // namespace berth::topo
