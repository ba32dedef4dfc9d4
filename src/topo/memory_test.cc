#include "topo/memory.h"

#include <gtest/gtest.h>

#include "topo/fake_tree_for_test.h"

namespace berth::topo {
namespace {

using testing::FakeTree;

// Aurora's kernel figure, the hardware total rather than what a job may use: 1161578 MB.
constexpr const char* kAuroraMeminfo = "MemTotal:       1189455872 kB\nMemFree: 1 kB\n";

constexpr const char* kMountinfoV2 =
    "24 1 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(Memory, CgroupV2LimitIsTheSmallestOnThePath) {
  FakeTree t;
  t.write("/proc/meminfo", kAuroraMeminfo);
  t.write("/proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n");
  t.write("/proc/self/mountinfo", kMountinfoV2);
  const std::string job = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7";
  t.write(job + "/memory.max", "274877906944\n");  // 262144 MB
  t.write(job + "/step_0/memory.max", "max\n");
  t.write(job + "/step_0/user/task_0/memory.max", "max\n");
  auto m = read_memory(t.root(), Env());
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->mb, 262144);
  EXPECT_EQ(m->source, MemorySource::kCgroup);
  EXPECT_NE(m->provenance.find("cgroup v2 memory.max"), std::string::npos);
  EXPECT_NE(m->provenance.find(job + "/memory.max"), std::string::npos) << m->provenance;
  EXPECT_TRUE(m->diagnostics.empty());
}

TEST(Memory, CgroupV1LimitWithoutMountinfoUsesTheUsualMount) {
  FakeTree t;
  t.write("/proc/meminfo", kAuroraMeminfo);
  t.write("/proc/self/cgroup", "9:name=systemd:/\n4:memory:/slurm/uid_1/job_2\n3:cpuset:/\n");
  t.write("/sys/fs/cgroup/memory/slurm/uid_1/job_2/memory.limit_in_bytes", "1073741824\n");
  auto m = read_memory(t.root(), Env());
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->mb, 1024);
  EXPECT_NE(m->provenance.find("cgroup v1 memory.limit_in_bytes"), std::string::npos);
}

TEST(Memory, CgroupNamespaceMountRootIsStripped) {
  // A container whose cgroup mount is rooted at its own cgroup.
  FakeTree t;
  t.write("/proc/meminfo", kAuroraMeminfo);
  t.write("/proc/self/cgroup", "0::/docker/abc\n");
  t.write("/proc/self/mountinfo",
          "30 25 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n");
  t.write("/sys/fs/cgroup/memory.max", "2147483648\n");
  auto m = read_memory(t.root(), Env());
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->mb, 2048);
}

TEST(Memory, NoLimitFallsThroughToTheScheduler) {
  const std::pair<const char*, const char*> cgroups[] = {
      {"0::/a\n", "max\n"}, {"4:memory:/a\n", "9223372036854771712\n"},  // v1's "unlimited"
  };
  for (auto [cgroup, limit] : cgroups) {
    FakeTree t;
    t.write("/proc/meminfo", kAuroraMeminfo);
    t.write("/proc/self/cgroup", cgroup);
    t.write("/sys/fs/cgroup/a/memory.max", limit);
    t.write("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", limit);
    Env env;
    env.set("SLURM_MEM_PER_NODE", "257200");
    auto m = read_memory(t.root(), env);
    ASSERT_TRUE(m.ok()) << m.error().message();
    EXPECT_EQ(m->mb, 257200) << cgroup;
    EXPECT_EQ(m->source, MemorySource::kScheduler);
    EXPECT_EQ(m->provenance, "env SLURM_MEM_PER_NODE");
  }
}

TEST(Memory, ALimitAboveMemTotalLimitsNothing) {
  FakeTree t;
  t.write("/proc/meminfo", "MemTotal: 1048576 kB\n");  // 1024 MB
  t.write("/proc/self/cgroup", "0::/\n");
  t.write("/sys/fs/cgroup/memory.max", "4294967296\n");
  auto m = read_memory(t.root(), Env());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->source, MemorySource::kKernel);
  EXPECT_EQ(m->mb, 1024);
  ASSERT_EQ(m->diagnostics.size(), 2u);
  EXPECT_NE(m->diagnostics[0].find("limits nothing"), std::string::npos);
}

TEST(Memory, SlurmPerCpuTimesCpus) {
  FakeTree t;
  Env env;
  env.set("SLURM_MEM_PER_CPU", "2000");
  env.set("SLURM_CPUS_ON_NODE", "64");
  auto m = read_memory(t.root(), env);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mb, 128000);
  EXPECT_EQ(m->provenance, "env SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE");
}

TEST(Memory, MemTotalIsTheLastResortAndSaysSo) {
  FakeTree t;
  t.write("/proc/meminfo", kAuroraMeminfo);
  auto m = read_memory(t.root(), Env());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mb, 1161578);
  EXPECT_EQ(m->source, MemorySource::kKernel);
  EXPECT_EQ(m->provenance, "/proc/meminfo under " + t.root() + " MemTotal");
  ASSERT_EQ(m->diagnostics.size(), 1u);
  EXPECT_NE(m->diagnostics[0].find("not what a job may use"), std::string::npos);
}

TEST(Memory, NothingToReadIsAbsentNotAnError) {
  FakeTree t;
  auto m = read_memory(t.root(), Env());
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->mb);
  EXPECT_EQ(m->source, MemorySource::kNone);
}

TEST(Memory, MalformedInputsAreErrorsNamingThem) {
  struct Case {
    const char* file;
    const char* content;
    const char* want;
  };
  const Case cases[] = {
      {"/proc/meminfo", "MemTotal: lots kB\n", "/proc/meminfo under"},
      {"/proc/self/cgroup", "garbage\n", "/proc/self/cgroup under"},
      {"/proc/self/cgroup", "0::/../../etc\n", "contains '..'"},
      {"/proc/self/cgroup", "0::relative\n", "not absolute"},
      {"/sys/fs/cgroup/memory.max", "12x\n", "/sys/fs/cgroup/memory.max under"},
  };
  for (const Case& c : cases) {
    FakeTree t;
    t.write("/proc/self/cgroup", "0::/\n");
    t.write(c.file, c.content);
    auto m = read_memory(t.root(), Env());
    ASSERT_FALSE(m.ok()) << c.file << " " << c.content;
    EXPECT_NE(m.error().message().find(c.want), std::string::npos) << m.error().message();
  }
  FakeTree t;
  Env env;
  env.set("SLURM_MEM_PER_NODE", "250G");
  auto m = read_memory(t.root(), env);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("SLURM_MEM_PER_NODE"), std::string::npos);
}

TEST(MemoryParsers, ProcCgroup) {
  auto p = parse_proc_cgroup("12:memory:/a:b\n0::/u\n").value();
  EXPECT_EQ(p.v1_memory, "/a:b");
  EXPECT_EQ(p.v2, "/u");
  auto q = parse_proc_cgroup("4:cpu,memory:/x\n").value();
  EXPECT_EQ(q.v1_memory, "/x");
  EXPECT_FALSE(q.v2);
  EXPECT_FALSE(parse_proc_cgroup("x::/\n").ok());
  EXPECT_FALSE(parse_proc_cgroup("0:/\n").ok());
}

TEST(MemoryParsers, Mountinfo) {
  auto m = parse_mountinfo_cgroups(
               std::string(kMountinfoV2) +
               "35 24 0:30 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n"
               "36 24 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
               "37 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
               .value();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(m[0].v2);
  EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup");
  EXPECT_FALSE(m[1].v2);
  EXPECT_EQ(m[1].mount_point, "/sys/fs/cgroup/mem ory");
  EXPECT_FALSE(parse_mountinfo_cgroups("1 2 3\n").ok());
}

TEST(MemoryParsers, Limits) {
  EXPECT_FALSE(parse_cgroup_limit("max\n").value());
  EXPECT_EQ(parse_cgroup_limit("1024\n").value(), 1024u);
  EXPECT_FALSE(parse_cgroup_limit("9223372036854771712").value());
  EXPECT_FALSE(parse_cgroup_limit("-1").ok());
  EXPECT_FALSE(parse_cgroup_limit("").ok());
  EXPECT_EQ(parse_meminfo_total_kb("MemFree: 3 kB\n").value(), std::nullopt);
  EXPECT_EQ(parse_meminfo_total_kb("MemTotal: 3 kB").value(), 3);
  EXPECT_FALSE(parse_meminfo_total_kb("MemTotal: 3 MB").ok());
}

}  // namespace
}  // namespace berth::topo
