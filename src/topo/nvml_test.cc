// NVML loaded at run time (nvml.h), against the test NVML library of tests/helpers
// (libberth-test-nvml.so, found through BERTH_HELPERS_DIR), which answers from a file
// named by BERTH_TEST_NVML: what berth reads of GPUs, MIG instances and processes, and
// how it says why there is no NVML.
#include "topo/nvml.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "topo/fake_tree_for_test.h"

namespace berth::topo {
namespace {

constexpr const char* kGpuA = "GPU-0aaa1111-2222-3333-4444-555566667777";
constexpr const char* kGpuB = "GPU-0bbb1111-2222-3333-4444-555566667777";
constexpr const char* kMig0 = "MIG-1aaa1111-2222-3333-4444-555566667777";
constexpr const char* kMig3 = "MIG-1ccc1111-2222-3333-4444-555566667777";

std::string fake_library() {
  const char* dir = std::getenv("BERTH_HELPERS_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) + "/libberth-test-nvml.so" : "";
}

std::vector<std::pair<int64_t, std::string>> pairs(const std::vector<NvmlProcess>& processes) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const auto& p : processes) out.emplace_back(p.pid, p.device_uuid);
  std::sort(out.begin(), out.end());
  return out;
}

class Nvml : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fake_library().empty()) GTEST_SKIP() << "BERTH_HELPERS_DIR is not set (run under ctest)";
  }

  // Writes the fake's file and opens NVML through the fake library.
  std::shared_ptr<topo::Nvml> open(const std::string& file, std::string* why) {
    tree_.write("/nvml", file);
    ::setenv("BERTH_TEST_NVML", (tree_.root() + "/nvml").c_str(), 1);
    Env env;
    env.set("BERTH_NVML_LIBRARY", fake_library());
    return open_nvml(env, why);
  }
  std::shared_ptr<topo::Nvml> open(const std::string& file) {
    std::string why;
    auto nvml = open(file, &why);
    EXPECT_NE(nvml, nullptr) << why;
    return nvml;
  }

  testing::FakeTree tree_;
};

TEST_F(Nvml, ListsGpusWithTheirModelBusAndDriver) {
  auto nvml =
      open(fmt::format("driver 580.95.05\n"
                       "gpu {} 0000:3b:00.0 NVIDIA H100 80GB HBM3\n"
                       "gpu {} 0001:c1:00.0 NVIDIA A100-SXM4-40GB   # a comment\n",
                       kGpuA, kGpuB));
  ASSERT_NE(nvml, nullptr);
  auto gpus = nvml->gpus();
  ASSERT_TRUE(gpus.ok()) << gpus.error().message();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].uuid, kGpuA);
  EXPECT_EQ((*gpus)[0].model, "NVIDIA H100 80GB HBM3");
  // The fake writes NVML's "00000000:3B:00.0"; berth names it as sysfs does.
  EXPECT_EQ((*gpus)[0].bus, "0000:3b:00.0");
  EXPECT_EQ((*gpus)[1].bus, "0001:c1:00.0");
  EXPECT_EQ((*gpus)[1].model, "NVIDIA A100-SXM4-40GB");
  for (const auto& g : *gpus) {
    EXPECT_FALSE(g.mig_on);
    EXPECT_TRUE(g.migs.empty());
  }
  auto driver = nvml->driver_version();
  ASSERT_TRUE(driver.ok()) << driver.error().message();
  EXPECT_EQ(*driver, "580.95.05");
}

TEST_F(Nvml, ListsTheMigInstancesOfAGpuInMigMode) {
  auto nvml =
      open(fmt::format("gpu {0} 0000:00:06.0 NVIDIA H100 80GB HBM3\n"
                       "gpu {1} 0000:00:07.0 NVIDIA H100 80GB HBM3\n"
                       "mig {0} {2} 0 NVIDIA H100 80GB HBM3 MIG 1g.10gb\n"
                       "mig {0} {3} 3 NVIDIA H100 80GB HBM3 MIG 3g.40gb\n",
                       kGpuA, kGpuB, kMig0, kMig3));
  ASSERT_NE(nvml, nullptr);
  auto gpus = nvml->gpus();
  ASSERT_TRUE(gpus.ok()) << gpus.error().message();
  ASSERT_EQ(gpus->size(), 2u);
  const NvmlGpu& a = (*gpus)[0];
  EXPECT_TRUE(a.mig_on);
  ASSERT_EQ(a.migs.size(), 2u);  // indices 1, 2 and 4..6 hold no instance
  EXPECT_EQ(a.migs[0].uuid, kMig0);
  EXPECT_EQ(a.migs[0].index, 0);
  EXPECT_EQ(a.migs[0].name, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
  EXPECT_EQ(a.migs[1].uuid, kMig3);
  EXPECT_EQ(a.migs[1].index, 3);
  EXPECT_FALSE((*gpus)[1].mig_on);
  EXPECT_TRUE((*gpus)[1].migs.empty());
}

TEST_F(Nvml, ProcessesAreNamedByTheGpuOrMigInstanceTheyHold) {
  auto nvml =
      open(fmt::format("gpu {0} 0000:00:06.0 H100\n"
                       "gpu {1} 0000:00:07.0 H100\n"
                       "mig {0} {2} 0 1g.10gb\n"
                       "mig {0} {3} 3 3g.40gb\n"
                       "process 100 {1}\n"
                       "process 101 {1}\n"
                       "process 200 {2}\n"
                       "process 300 {3}\n",
                       kGpuA, kGpuB, kMig0, kMig3));
  ASSERT_NE(nvml, nullptr);
  auto processes = nvml->compute_processes();
  ASSERT_TRUE(processes.ok()) << processes.error().message();
  using P = std::pair<int64_t, std::string>;
  EXPECT_EQ(pairs(*processes),
            (std::vector<P>{{100, kGpuB}, {101, kGpuB}, {200, kMig0}, {300, kMig3}}));
}

TEST_F(Nvml, SeesProcessesThatStartWhileItIsOpen) {
  std::string later = tree_.root() + "/later";
  auto nvml = open(fmt::format("gpu {} 0000:00:06.0 H100\nprocesses-from {}\n", kGpuA, later));
  ASSERT_NE(nvml, nullptr);
  auto before = nvml->compute_processes();
  ASSERT_TRUE(before.ok()) << before.error().message();
  EXPECT_TRUE(before->empty());
  tree_.write("/later", fmt::format("4242 {}\n", kGpuA));
  auto after = nvml->compute_processes();
  ASSERT_TRUE(after.ok()) << after.error().message();
  using P = std::pair<int64_t, std::string>;
  EXPECT_EQ(pairs(*after), (std::vector<P>{{4242, kGpuA}}));
}

TEST_F(Nvml, AsksAgainWhenTheProcessListGrowsBeforeItIsCopied) {
  // The fake reports 3 processes more after its first answer: the room berth made for
  // the one it was told of is too small, and it must ask again.
  auto nvml = open(fmt::format("gpu {0} 0000:00:06.0 H100\nprocess 7 {0}\ngrow {0} 3\n", kGpuA));
  ASSERT_NE(nvml, nullptr);
  auto processes = nvml->compute_processes();
  ASSERT_TRUE(processes.ok()) << processes.error().message();
  using P = std::pair<int64_t, std::string>;
  EXPECT_EQ(pairs(*processes),
            (std::vector<P>{{7, kGpuA}, {4000000, kGpuA}, {4000001, kGpuA}, {4000002, kGpuA}}));
}

TEST_F(Nvml, AFailedProcessQueryNamesTheFunction) {
  tree_.write("/bad", "not a pid\n");
  auto nvml =
      open(fmt::format("gpu {} 0000:00:06.0 H100\nprocesses-from {}/bad\n", kGpuA, tree_.root()));
  ASSERT_NE(nvml, nullptr);
  // nvmlInit_v2 ignored the processes; the first query reads them and fails.
  auto processes = nvml->compute_processes();
  ASSERT_FALSE(processes.ok());
  EXPECT_NE(processes.error().message().find("nvmlDeviceGetComputeRunningProcesses_v3"),
            std::string::npos)
      << processes.error().message();
  EXPECT_NE(processes.error().message().find(kGpuA), std::string::npos);
}

TEST_F(Nvml, RefusesTextThatIsNotPrintable) {
  auto nvml = open(fmt::format("gpu {} 0000:00:06.0 NVIDIA\tH100\n", kGpuA));
  ASSERT_NE(nvml, nullptr);
  auto gpus = nvml->gpus();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.error().message(),
            "nvmlDeviceGetName returned a character that is not printable (0x09)");
}

TEST_F(Nvml, AFileThatFailsInitGivesNvmlsReason) {
  for (const char* file : {"gpu\n", "gpu GPU-1 0000:00:06.0\n", "hello world\n",
                           "mig GPU-unknown MIG-1 0 1g.10gb\n"}) {
    std::string why;
    EXPECT_EQ(open(file, &why), nullptr) << file;
    EXPECT_EQ(why, fake_library() + ": nvmlInit_v2: Driver Not Loaded (NVML error 9)") << file;
  }
  ::setenv("BERTH_TEST_NVML", (tree_.root() + "/absent").c_str(), 1);
  Env env;
  env.set("BERTH_NVML_LIBRARY", fake_library());
  std::string why;
  EXPECT_EQ(open_nvml(env, &why), nullptr);
  EXPECT_NE(why.find("nvmlInit_v2: Driver Not Loaded"), std::string::npos) << why;
}

TEST_F(Nvml, EachHolderKeepsItsOwnInitialisation) {
  std::string file = fmt::format("driver 1.2.3\ngpu {} 0000:00:06.0 H100\n", kGpuA);
  auto first = open(file);
  auto second = open(file);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  first.reset();  // its nvmlShutdown leaves NVML up for the second
  auto gpus = second->gpus();
  ASSERT_TRUE(gpus.ok()) << gpus.error().message();
  EXPECT_EQ(gpus->size(), 1u);
}

TEST(NvmlLibrary, AnAbsentLibraryIsAReasonNamingIt) {
  Env env;
  env.set("BERTH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  std::string why;
  EXPECT_EQ(open_nvml(env, &why), nullptr);
  EXPECT_NE(why.find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;

  // Without the variable, NVIDIA's library; a machine without it says so.
  why.clear();
  if (open_nvml(Env(), &why) == nullptr) {
    EXPECT_NE(why.find(kNvmlLibrary), std::string::npos) << why;
  }
}

TEST(NvmlLibrary, ALibraryWithoutNvmlsFunctionsIsNotUsable) {
  Env env;
  env.set("BERTH_NVML_LIBRARY", "libc.so.6");
  std::string why;
  EXPECT_EQ(open_nvml(env, &why), nullptr);
  EXPECT_EQ(why, "libc.so.6 has no nvmlInit_v2");
}

}  // namespace
}  // namespace berth::topo
