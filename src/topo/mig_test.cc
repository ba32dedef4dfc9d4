// MIG instances as GPUs (mig.h): an NVIDIA node whose first GPU is in MIG mode with two
// instances, laid out as the driver lays it out (capabilities/gpu0/mig/gi<N>), with
// NVML behind its seam answering, absent, or failing.
#include "topo/mig.h"

#include <gtest/gtest.h>

#include "topo/fake_tree_for_test.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

using testing::FakeTree;

class FakeNvml : public Nvml {
 public:
  explicit FakeNvml(Result<std::vector<NvmlGpu>> gpus) : gpus_(std::move(gpus)) {}
  Result<std::vector<NvmlGpu>> gpus() override { return gpus_; }
  Result<std::string> driver_version() override { return std::string("580.95.05"); }
  Result<std::vector<NvmlProcess>> compute_processes() override {
    return std::vector<NvmlProcess>{};
  }

 private:
  Result<std::vector<NvmlGpu>> gpus_;
};

// Two H100s; the driver shows instances gi1 and gi2 on the first, and an empty mig
// directory (MIG off) on the second.
void two_gpus(const FakeTree& t) {
  const char* buses[] = {"0000:3b:00.0", "0000:c1:00.0"};
  for (int i = 0; i < 2; ++i) {
    t.write(std::string("/proc/driver/nvidia/gpus/") + buses[i] + "/information",
            std::string("Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-") +
                std::to_string(i) + "aaa\nBus Location: \t " + buses[i] + "\n");
    t.mkdir("/proc/driver/nvidia/capabilities/gpu" + std::to_string(i) + "/mig");
  }
  t.write("/sys/bus/pci/devices/0000:3b:00.0/local_cpulist", "0-7\n");
  t.mkdir("/proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0");
  t.mkdir("/proc/driver/nvidia/capabilities/gpu0/mig/gi2/ci0");
}

std::vector<NvmlGpu> nvml_view() {
  NvmlGpu a{"GPU-0aaa", "NVIDIA H100 80GB HBM3", "0000:3b:00.0", true, {}};
  a.migs = {{"MIG-1111", 0, "NVIDIA H100 80GB HBM3 MIG 3g.40gb"},
            {"MIG-2222", 1, "NVIDIA H100 80GB HBM3 MIG 3g.40gb"}};
  NvmlGpu b{"GPU-1aaa", "NVIDIA H100 80GB HBM3", "0000:c1:00.0", false, {}};
  return {a, b};
}

struct Read {
  Gpus gpus;
  std::vector<GpuIdentity> devices;
};

Read read(const FakeTree& t, const Env& env, const OpenNvml& open) {
  Read r;
  auto g = read_gpus(t.root(), env);
  EXPECT_TRUE(g.ok()) << g.error().message();
  auto d = read_gpu_identities(t.root(), GpuVendor::kNvidia);
  EXPECT_TRUE(d.ok()) << d.error().message();
  r.gpus = *g;
  r.devices = *d;
  auto done = describe_mig(t.root(), open, r.gpus, r.devices);
  EXPECT_TRUE(done.ok()) << done.error().message();
  return r;
}

TEST(Mig, InstancesAreTheGpusWhereMigIsOn) {
  FakeTree t;
  two_gpus(t);
  auto r = read(t, Env(), [](std::string*) { return std::make_shared<FakeNvml>(nvml_view()); });
  EXPECT_EQ(str::join(r.gpus.ids, ","), "MIG-1111,MIG-2222,1");
  EXPECT_EQ(r.gpus.node_count, 3);
  ASSERT_EQ(r.devices.size(), 3u);
  EXPECT_EQ(r.devices[1].uuid, "MIG-2222");
  EXPECT_EQ(r.devices[1].model, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
  EXPECT_EQ(r.devices[1].bus, "0000:3b:00.0");  // its GPU's, and its cores too
  EXPECT_EQ(r.devices[1].local_cores.size(), 8u);
  EXPECT_EQ(r.devices[2].id, "1");
  EXPECT_TRUE(r.gpus.diagnostics.empty());
}

TEST(Mig, AVariablesIdsAreKept) {
  FakeTree t;
  two_gpus(t);
  Env env;
  env.set("CUDA_VISIBLE_DEVICES", "MIG-2222");
  auto r = read(t, env, [](std::string*) { return std::make_shared<FakeNvml>(nvml_view()); });
  EXPECT_EQ(str::join(r.gpus.ids, ","), "MIG-2222");
  // The whole GPUs stay (a scheduler's index names one), the instances are added.
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_EQ(r.devices[0].id, "0");
  EXPECT_EQ(identities_of({"1"}, r.devices)[0].uuid, "GPU-1aaa");
  // Found by UUID among the node's devices.
  EXPECT_EQ(identities_of(r.gpus.ids, r.devices)[0].model, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
}

TEST(Mig, WithoutNvmlTheWholeGpuIsGivenAndSaid) {
  FakeTree t;
  two_gpus(t);
  auto r = read(t, Env(), [](std::string* why) {
    *why = "cannot load libnvidia-ml.so.1";
    return std::shared_ptr<Nvml>();
  });
  EXPECT_EQ(str::join(r.gpus.ids, ","), "0,1");
  ASSERT_EQ(r.gpus.diagnostics.size(), 1u);
  EXPECT_NE(r.gpus.diagnostics[0].find("GPU(s) 0 are in MIG mode"), std::string::npos);
  EXPECT_NE(r.gpus.diagnostics[0].find("cannot load libnvidia-ml.so.1"), std::string::npos);
}

TEST(Mig, NvmlIsNotOpenedWithoutInstances) {
  FakeTree t;
  two_gpus(t);
  std::filesystem::remove_all(t.root() + "/proc/driver/nvidia/capabilities/gpu0/mig/gi1");
  std::filesystem::remove_all(t.root() + "/proc/driver/nvidia/capabilities/gpu0/mig/gi2");
  bool opened = false;
  auto r = read(t, Env(), [&](std::string*) {
    opened = true;
    return std::make_shared<FakeNvml>(nvml_view());
  });
  EXPECT_FALSE(opened);
  EXPECT_EQ(str::join(r.gpus.ids, ","), "0,1");
}

TEST(Mig, ANvmlFailureIsSaidAndTheGpusStayWhole) {
  FakeTree t;
  two_gpus(t);
  auto r = read(t, Env(), [](std::string*) {
    return std::make_shared<FakeNvml>(fail(Errc::kIo, "nvmlDeviceGetCount_v2: Unknown Error"));
  });
  EXPECT_EQ(str::join(r.gpus.ids, ","), "0,1");
  ASSERT_EQ(r.gpus.diagnostics.size(), 1u);
  EXPECT_NE(r.gpus.diagnostics[0].find("Unknown Error"), std::string::npos);
}

}  // namespace
}  // namespace berth::topo
