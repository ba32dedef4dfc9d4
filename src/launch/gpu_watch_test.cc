// The GPU watch (gpu_watch.h) against a fake NVML and real processes: a child in a
// process group of its own stands for a step, and the fake says which device it holds.
#include "launch/gpu_watch.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

namespace berth::launch {
namespace {

using namespace std::chrono_literals;

constexpr const char* kGpuA = "GPU-0aaa1111-2222-3333-4444-555566667777";
constexpr const char* kGpuB = "GPU-0bbb1111-2222-3333-4444-555566667777";
constexpr const char* kMig = "MIG-1aaa1111-2222-3333-4444-555566667777";

// NVML that reports whatever processes the test sets, and counts how often it is asked.
class FakeNvml final : public topo::Nvml {
 public:
  void set(std::vector<topo::NvmlProcess> processes) {
    std::lock_guard lock(mutex_);
    processes_ = std::move(processes);
  }
  void fail_with(std::string message) {
    std::lock_guard lock(mutex_);
    error_ = std::move(message);
  }
  int polls() const { return polls_.load(); }

  Result<std::vector<topo::NvmlGpu>> gpus() override { return std::vector<topo::NvmlGpu>{}; }
  Result<std::string> driver_version() override { return std::string("1.0"); }
  Result<std::vector<topo::NvmlProcess>> compute_processes() override {
    ++polls_;
    std::lock_guard lock(mutex_);
    if (!error_.empty()) return fail(Errc::kIo, error_);
    return processes_;
  }

 private:
  std::mutex mutex_;
  std::vector<topo::NvmlProcess> processes_;
  std::string error_;
  std::atomic<int> polls_{0};
};

// A sleeping child that leads a process group of its own, killed and reaped at the end.
class Step {
 public:
  Step() {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      for (;;) ::pause();
    }
    ::setpgid(pid_, pid_);  // either side may run first; both make the group
  }
  ~Step() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Waits, up to a bound far beyond need, until `done`.
template <class F>
bool eventually(F done) {
  for (auto until = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(1ms)) {
    if (done()) return true;
  }
  return false;
}

TEST(GpuWatch, FindsAProcessOnADeviceItWasNotGiven) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1h);
  Step step;
  nvml->set({{step.pid(), kGpuA}, {step.pid(), kGpuB}});
  auto ticket = watch.watch(step.pid(), {kGpuA}, "step 0");
  auto report = watch.finish(ticket);
  EXPECT_EQ(report.error, "");
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].pid, step.pid());
  EXPECT_EQ(report.findings[0].device_uuid, kGpuB);
  EXPECT_EQ(report.findings[0].comm, "launch_test");  // a forked child keeps its parent's
}

TEST(GpuWatch, ADeviceItWasGivenIsNoFinding) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1h);
  Step step;
  nvml->set({{step.pid(), kGpuA}, {step.pid(), kMig}});
  auto report = watch.finish(watch.watch(step.pid(), {kGpuA, kMig}, "step 0"));
  EXPECT_EQ(report.error, "");
  EXPECT_TRUE(report.findings.empty());
}

TEST(GpuWatch, AProcessOfAnotherGroupIsNotTheSteps) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1h);
  Step step;
  nvml->set({{::getpid(), kGpuB}});  // the test itself, in the group it was started in
  auto report = watch.finish(watch.watch(step.pid(), {}, "step 0"));
  EXPECT_TRUE(report.findings.empty());
}

TEST(GpuWatch, EachStepIsJudgedByItsOwnDevices) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1h);
  Step a, b;
  nvml->set({{a.pid(), kGpuA}, {b.pid(), kGpuA}});
  auto ta = watch.watch(a.pid(), {kGpuA}, "a");
  auto tb = watch.watch(b.pid(), {kGpuB}, "b");
  EXPECT_TRUE(watch.finish(ta).findings.empty());
  auto report = watch.finish(tb);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].pid, b.pid());
}

TEST(GpuWatch, PollsWhileAStepRunsAndReportsEachDeviceOnce) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1ms);
  Step step;
  nvml->set({{step.pid(), kGpuB}});
  auto ticket = watch.watch(step.pid(), {kGpuA}, "step 0");
  // The second poll starts after the first has recorded what it saw.
  ASSERT_TRUE(eventually([&] { return nvml->polls() >= 3; }));
  nvml->set({});  // the process let go of the device before the step ended
  auto report = watch.finish(ticket);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].device_uuid, kGpuB);
}

TEST(GpuWatch, DoesNotAskNvmlWhileNothingIsWatched) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1ms);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(nvml->polls(), 0);
  Step step;
  (void)watch.finish(watch.watch(step.pid(), {}, "step 0"));
  int after = nvml->polls();
  std::this_thread::sleep_for(20ms);
  EXPECT_LE(nvml->polls(), after + 1);  // at most one poll was already under way
}

TEST(GpuWatch, AFailedPollIsReportedWithTheStepsLabel) {
  auto nvml = std::make_shared<FakeNvml>();
  GpuWatch watch(nvml, 1h);
  nvml->fail_with("nvmlDeviceGetComputeRunningProcesses_v3: GPU is lost (NVML error 15)");
  Step step;
  auto report = watch.finish(watch.watch(step.pid(), {}, "step 3"));
  EXPECT_EQ(report.error,
            "step 3: nvmlDeviceGetComputeRunningProcesses_v3: GPU is lost (NVML error 15)");
  EXPECT_NE(watch.finish(12345).error.find("ticket 12345"), std::string::npos);
}

TEST(GpuWatch, DescribesAFindingAsASentence) {
  GpuFinding f{1234, kGpuB, "python3"};
  EXPECT_EQ(describe_finding(f, {kGpuA}),
            fmt::format("process 1234 (python3) used {}, which it was not given (given: {})", kGpuB,
                        kGpuA));
  EXPECT_EQ(
      describe_finding(f, {}),
      fmt::format("process 1234 (python3) used {}, which it was not given (given: no GPU)", kGpuB));
  EXPECT_EQ(describe_finding(f, {kGpuA, kMig}),
            fmt::format("process 1234 (python3) used {}, which it was not given (given: {}, {})",
                        kGpuB, kGpuA, kMig));
}

TEST(GpuWatch, ReadsTheGroupAndNameOfAStatLine) {
  struct Case {
    const char* text;
    const char* comm;
    int64_t pgrp;
  };
  for (const Case& c : {
           Case{"1234 (python3) S 1 1234 1234 0 -1 4194560 ...\n", "python3", 1234},
           Case{"5 (a b) R 1 77 5\n", "a b", 77},
           Case{"5 (x) S 1 (y) S 1 9 9\n", "x) S 1 (y", 9},  // a name that mimics fields
           Case{"5 ()) S 1 3 3\n", ")", 3},
           Case{"5 (t\x01) S 1 3 3\n", "t\\x01", 3},
       }) {
    auto stat = parse_proc_stat(c.text);
    ASSERT_TRUE(stat.ok()) << c.text << ": " << stat.error().message();
    EXPECT_EQ(stat->comm, c.comm) << c.text;
    EXPECT_EQ(stat->pgrp, c.pgrp) << c.text;
  }
  for (const char* bad : {"", "5 python3 S 1 3", "5 (x) S 1", "5 (x) S 1 -3", "5 )x( S 1 3"}) {
    EXPECT_FALSE(parse_proc_stat(bad).ok()) << bad;
  }
}

TEST(GpuWatch, ReadsTheGroupOfARealProcess) {
  Step step;
  std::string path = fmt::format("/proc/{}/stat", step.pid());
  FILE* f = ::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[1024] = {};
  size_t n = ::fread(buf, 1, sizeof buf - 1, f);
  ::fclose(f);
  auto stat = parse_proc_stat(std::string_view(buf, n));
  ASSERT_TRUE(stat.ok()) << stat.error().message();
  EXPECT_EQ(stat->pgrp, step.pid());
  EXPECT_NE(stat->pgrp, ::getpgrp());
}

}  // namespace
}  // namespace berth::launch
