// The GPU check of a run's steps (gpu_proof.h): which steps it declines, and what it
// says when it does; what a step given several MIG instances is told.
#include "pipeline/gpu_proof.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

place::Placement on_gpus(std::vector<std::string> ids, std::vector<std::string> uuids) {
  place::Placement p;
  p.nodes = {"n1"};
  p.cores = {{0}};
  p.gpus = static_cast<int>(ids.size());
  p.gpu_ids = std::move(ids);
  p.gpu_variable = "CUDA_VISIBLE_DEVICES";
  for (auto& u : uuids) {
    topo::GpuIdentity d;
    d.uuid = std::move(u);
    p.gpu_devices.push_back(std::move(d));
  }
  return p;
}

TEST(GpuProof, AStepGivenNoGpuIsNotWatchedAndNothingIsSaid) {
  Env env;
  env.set("BERTH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  GpuProof proof(env);
  std::string notice;
  EXPECT_EQ(proof.begin(on_gpus({}, {}), "cpu", &notice), nullptr);
  place::Placement amd = on_gpus({"0"}, {"GPU-a"});
  amd.gpu_variable = "ROCR_VISIBLE_DEVICES";
  EXPECT_EQ(proof.begin(amd, "amd", &notice), nullptr);
  EXPECT_TRUE(notice.empty()) << notice;
}

TEST(GpuProof, WithoutNvmlTheRunSaysSoOnce) {
  Env env;
  env.set("BERTH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  GpuProof proof(env);
  std::string first, second;
  EXPECT_EQ(proof.begin(on_gpus({"0"}, {"GPU-a"}), "g-0", &first), nullptr);
  EXPECT_EQ(proof.begin(on_gpus({"1"}, {"GPU-b"}), "g-1", &second), nullptr);
  EXPECT_NE(first.find("not checked, because NVML is not available"), std::string::npos) << first;
  EXPECT_NE(first.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << first;
  EXPECT_TRUE(second.empty()) << second;
}

TEST(GpuProof, ADeviceWithoutAUuidIsSaidOnce) {
  Env env;
  GpuProof proof(env);
  std::string first, second;
  EXPECT_EQ(proof.begin(on_gpus({"0"}, {""}), "g-0", &first), nullptr);
  EXPECT_EQ(proof.begin(on_gpus({"1"}, {}), "g-1", &second), nullptr);
  EXPECT_NE(first.find("no UUID (GPU 0 here)"), std::string::npos) << first;
  EXPECT_TRUE(second.empty()) << second;
}

TEST(GpuProof, SeveralMigInstancesAreToldCudaUsesOne) {
  EXPECT_FALSE(GpuProof::mig_limit_notice(on_gpus({"MIG-a"}, {"MIG-a"})));
  EXPECT_FALSE(GpuProof::mig_limit_notice(on_gpus({"0", "1"}, {"GPU-a", "GPU-b"})));
  auto two = GpuProof::mig_limit_notice(on_gpus({"MIG-a", "MIG-b"}, {"MIG-a", "MIG-b"}));
  ASSERT_TRUE(two);
  EXPECT_NE(two->find("given 2 MIG instances"), std::string::npos) << *two;
}

}  // namespace
}  // namespace berth::pipeline
