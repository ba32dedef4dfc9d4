#include "topo/gpus.h"

#include <gtest/gtest.h>

#include "topo/fake_tree_for_test.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

using testing::FakeTree;

std::string ids(const Gpus& g) { return str::join(g.ids, ","); }

void nvidia_proc(const FakeTree& t, int n) {
  for (int i = 0; i < n; ++i) {
    t.write("/proc/driver/nvidia/gpus/0000:0" + std::to_string(i) + ":00.0/information",
            "Model: A100\n");
  }
}

// Frontier: one CPU kfd node, then 8 GCDs.
void frontier_kfd(const FakeTree& t) {
  t.write("/sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 64\nsimd_count 0\n");
  for (int i = 1; i <= 8; ++i) {
    t.write("/sys/class/kfd/kfd/topology/nodes/" + std::to_string(i) + "/properties",
            "cpu_cores_count 0\nsimd_count 440\nmax_waves_per_simd 8\n");
  }
}

// Aurora: six Intel GPUs of two tiles each.
void aurora_drm(const FakeTree& t) {
  for (int c = 0; c < 6; ++c) {
    std::string card = "/sys/class/drm/card" + std::to_string(c);
    t.write(card + "/device/vendor", "0x8086\n");
    t.mkdir(card + "/gt/gt0");
    t.mkdir(card + "/gt/gt1");
  }
  t.mkdir("/sys/class/drm/card0-DP-1");  // a connector, not a card
}

TEST(Gpus, NoneOnANodeWithoutDrivers) {
  FakeTree t;
  auto g = read_gpus(t.root(), Env());
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->vendor, GpuVendor::kNone);
  EXPECT_EQ(g->count(), 0);
  EXPECT_NE(g->provenance.find("none found"), std::string::npos);
  EXPECT_TRUE(g->diagnostics.empty());
}

TEST(Gpus, NvidiaFromProc) {
  FakeTree t;
  nvidia_proc(t, 4);
  auto g = read_gpus(t.root(), Env());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->vendor, GpuVendor::kNvidia);
  EXPECT_EQ(ids(*g), "0,1,2,3");
  EXPECT_EQ(g->provenance, "/proc/driver/nvidia/gpus under " + t.root());
  EXPECT_EQ(g->node_count, 4);
}

TEST(Gpus, NvidiaFromDevWhenProcIsAbsent) {
  FakeTree t;
  for (const char* d : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-modeset"}) {
    t.write(std::string("/dev/") + d, "");
  }
  auto g = read_gpus(t.root(), Env());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(ids(*g), "0,1");
  EXPECT_NE(g->provenance.find("/dev/nvidia[0-9]*"), std::string::npos);
}

struct EnvCase {
  const char* name;
  std::vector<std::pair<const char*, const char*>> env;
  const char* want_ids;
  const char* want_provenance;
  size_t diagnostics;
};

TEST(Gpus, VisibilityVariablesAreHonoured) {
  const EnvCase nvidia_cases[] = {
      {"restricts", {{"CUDA_VISIBLE_DEVICES", "2,3"}}, "2,3", "env CUDA_VISIBLE_DEVICES", 0},
      {"empty is none", {{"CUDA_VISIBLE_DEVICES", ""}}, "", "env CUDA_VISIBLE_DEVICES", 0},
      {"ends at -1", {{"CUDA_VISIBLE_DEVICES", "0,-1,2"}}, "0", "env CUDA_VISIBLE_DEVICES", 1},
      {"uuid",
       {{"CUDA_VISIBLE_DEVICES", "GPU-8f2c1a"}},
       "GPU-8f2c1a",
       "env CUDA_VISIBLE_DEVICES",
       0},
      {"spaces", {{"CUDA_VISIBLE_DEVICES", " 1 , 0 "}}, "1,0", "env CUDA_VISIBLE_DEVICES", 0},
      {"beyond the node is kept and reported",
       {{"CUDA_VISIBLE_DEVICES", "7"}},
       "7",
       "env CUDA_VISIBLE_DEVICES",
       1},
      {"another vendor's is ignored",
       {{"ROCR_VISIBLE_DEVICES", "1"}},
       "0,1,2,3",
       "/proc/driver/nvidia/gpus",
       0},
  };
  for (const EnvCase& c : nvidia_cases) {
    FakeTree t;
    nvidia_proc(t, 4);
    Env env;
    for (auto [k, v] : c.env) env.set(k, v);
    auto g = read_gpus(t.root(), env);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.error().message();
    EXPECT_EQ(ids(*g), c.want_ids) << c.name;
    EXPECT_EQ(g->provenance.rfind(c.want_provenance, 0), 0u) << c.name << ": " << g->provenance;
    EXPECT_EQ(g->diagnostics.size(), c.diagnostics) << c.name;
    EXPECT_EQ(g->node_count, 4) << c.name;
  }

  const EnvCase amd_cases[] = {
      {"node", {}, "0,1,2,3,4,5,6,7", "/sys/class/kfd/kfd/topology/nodes", 0},
      {"rocr", {{"ROCR_VISIBLE_DEVICES", "4,5"}}, "4,5", "env ROCR_VISIBLE_DEVICES", 0},
      {"hip indexes into rocr",
       {{"ROCR_VISIBLE_DEVICES", "4,5"}, {"HIP_VISIBLE_DEVICES", "1"}},
       "5",
       "env ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES",
       0},
      {"hip alone", {{"HIP_VISIBLE_DEVICES", "6,7"}}, "6,7", "env HIP_VISIBLE_DEVICES", 0},
      {"hip past the end",
       {{"ROCR_VISIBLE_DEVICES", "4"}, {"HIP_VISIBLE_DEVICES", "0,3"}},
       "4",
       "env ROCR",
       1},
  };
  for (const EnvCase& c : amd_cases) {
    FakeTree t;
    frontier_kfd(t);
    Env env;
    for (auto [k, v] : c.env) env.set(k, v);
    auto g = read_gpus(t.root(), env);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.error().message();
    EXPECT_EQ(g->vendor, GpuVendor::kAmd);
    EXPECT_EQ(ids(*g), c.want_ids) << c.name;
    EXPECT_EQ(g->provenance.rfind(c.want_provenance, 0), 0u) << c.name << ": " << g->provenance;
    EXPECT_EQ(g->diagnostics.size(), c.diagnostics) << c.name;
  }

  const EnvCase intel_cases[] = {
      {"node", {}, "0.0,0.1,1.0,1.1,2.0,2.1,3.0,3.1,4.0,4.1,5.0,5.1", "/sys/class/drm/card*", 0},
      {"tiles", {{"ZE_AFFINITY_MASK", "0.0,3.1"}}, "0.0,3.1", "env ZE_AFFINITY_MASK", 0},
      // Level Zero's default hierarchy is flat: a number is a tile, counted across
      // the node.
      {"flat by default", {{"ZE_AFFINITY_MASK", "2,11"}}, "1.0,5.1", "env ZE_AFFINITY_MASK", 0},
      {"flat, stated", {{"ZE_AFFINITY_MASK", "3"}, {"ZE_FLAT_DEVICE_HIERARCHY", "FLAT"}}, "1.1",
       "env ZE_AFFINITY_MASK", 0},
      {"flat, beyond the node", {{"ZE_AFFINITY_MASK", "1,12"}}, "0.1", "env ZE_AFFINITY_MASK", 1},
      {"an unknown hierarchy is read as flat",
       {{"ZE_AFFINITY_MASK", "1"}, {"ZE_FLAT_DEVICE_HIERARCHY", "tiles"}},
       "0.1",
       "env ZE_AFFINITY_MASK",
       1},
      {"composite: a whole card is its tiles",
       {{"ZE_AFFINITY_MASK", "2"}, {"ZE_FLAT_DEVICE_HIERARCHY", "composite"}},
       "2.0,2.1",
       "env ZE_AFFINITY_MASK",
       0},
      // Unmeasured, so an empty mask is neither assumed none nor all (gpus.cc).
      {"empty is not assumed",
       {{"ZE_AFFINITY_MASK", ""}},
       "0.0,0.1,1.0,1.1,2.0,2.1,3.0,3.1,4.0,4.1,5.0,5.1",
       "/sys/class/drm/card*",
       1},
  };
  for (const EnvCase& c : intel_cases) {
    FakeTree t;
    aurora_drm(t);
    Env env;
    for (auto [k, v] : c.env) env.set(k, v);
    auto g = read_gpus(t.root(), env);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.error().message();
    EXPECT_EQ(g->vendor, GpuVendor::kIntel);
    EXPECT_EQ(ids(*g), c.want_ids) << c.name;
    EXPECT_EQ(g->provenance.rfind(c.want_provenance, 0), 0u) << c.name << ": " << g->provenance;
    EXPECT_EQ(g->diagnostics.size(), c.diagnostics) << c.name;
    EXPECT_EQ(g->node_count, 12);
  }
}

TEST(Gpus, AVariableWithoutDriverFilesIsTakenWithANote) {
  FakeTree t;
  Env env;
  env.set("CUDA_VISIBLE_DEVICES", "0,1");
  auto g = read_gpus(t.root(), env);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->vendor, GpuVendor::kNvidia);
  EXPECT_EQ(ids(*g), "0,1");
  EXPECT_EQ(g->node_count, 0);
  EXPECT_EQ(g->diagnostics.size(), 1u);
}

TEST(Gpus, AmdRenderNodesAreCountedByVendor) {
  FakeTree t;
  for (int r : {128, 129, 130}) t.write("/dev/dri/renderD" + std::to_string(r), "");
  t.write("/sys/class/drm/renderD128/device/vendor", "0x1002\n");
  t.write("/sys/class/drm/renderD129/device/vendor", "0x1002\n");
  t.write("/sys/class/drm/renderD130/device/vendor", "0x1af4\n");  // virtio
  auto g = read_gpus(t.root(), Env());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->vendor, GpuVendor::kAmd);
  EXPECT_EQ(ids(*g), "0,1");
  EXPECT_NE(g->provenance.find("/dev/dri/renderD*"), std::string::npos);
}

TEST(Gpus, TwoVendorsAreReported) {
  FakeTree t;
  nvidia_proc(t, 1);
  aurora_drm(t);
  auto g = read_gpus(t.root(), Env());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->vendor, GpuVendor::kNvidia);
  ASSERT_EQ(g->diagnostics.size(), 1u);
  EXPECT_NE(g->diagnostics[0].find("12 intel GPUs"), std::string::npos) << g->diagnostics[0];
}

TEST(Gpus, MalformedInputsAreErrorsNamingThem) {
  {
    FakeTree t;
    t.write("/sys/class/kfd/kfd/topology/nodes/1/properties", "simd_count lots\n");
    auto g = read_gpus(t.root(), Env());
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message().find("/sys/class/kfd/kfd/topology/nodes/1/properties"),
              std::string::npos)
        << g.error().message();
  }
  {
    FakeTree t;
    nvidia_proc(t, 2);
    Env env;
    env.set("CUDA_VISIBLE_DEVICES", "0;rm -rf");
    auto g = read_gpus(t.root(), env);
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message().find("CUDA_VISIBLE_DEVICES: entry 1"), std::string::npos)
        << g.error().message();
  }
  {
    FakeTree t;
    nvidia_proc(t, 2);
    Env env;
    env.set("CUDA_VISIBLE_DEVICES", std::string(Env::kMaxValueBytes + 1, '1'));
    auto g = read_gpus(t.root(), env);
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message().find("CUDA_VISIBLE_DEVICES"), std::string::npos);
  }
}

TEST(VisibleDevices, ParsesAndBounds) {
  std::vector<std::string> notes;
  EXPECT_EQ(parse_visible_devices("", "X", &notes).value().size(), 0u);
  EXPECT_EQ(parse_visible_devices("0,0,1", "X", &notes).value(),
            (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(notes.size(), 1u);  // the repeat
  EXPECT_EQ(parse_visible_devices("MIG-GPU-1/2/0", "X", nullptr).value().size(), 1u);
  std::string many;
  for (int i = 0; i < 5000; ++i) many += std::to_string(i) + ",";
  EXPECT_FALSE(parse_visible_devices(many, "X", nullptr).ok());
  EXPECT_FALSE(parse_visible_devices(std::string(300, 'a'), "X", nullptr).ok());
}

TEST(KfdProperties, SimdCount) {
  EXPECT_EQ(parse_kfd_simd_count("cpu_cores_count 4\nsimd_count 0\n").value(), 0);
  EXPECT_EQ(parse_kfd_simd_count("simd_count 440").value(), 440);
  EXPECT_EQ(parse_kfd_simd_count("").value(), 0);
  EXPECT_FALSE(parse_kfd_simd_count("simd_count\n").ok());
  EXPECT_FALSE(parse_kfd_simd_count("simd_count 1 2\n").ok());
  EXPECT_FALSE(parse_kfd_simd_count("simd_count -1\n").ok());
}

}  // namespace
}  // namespace berth::topo
