#include "topo/cpu_reader.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "topo/cores.h"
#include "topo/fake_tree_for_test.h"
#include "util/idset.h"

namespace berth::topo {
namespace {

using testing::FakeTree;
using testing::range;

TEST(SysfsCpuReader, ReadsOnlineSiblingsAndAffinity) {
  FakeTree t;
  t.cpus(range(0, 3), [](int c) { return std::vector<int>{c % 2, c % 2 + 2}; });
  auto r = SysfsCpuReader(t.root(), std::vector<int>{1, 3}).read();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->online, range(0, 3));
  EXPECT_EQ(r->allowed, (std::vector<int>{1, 3}));
  EXPECT_EQ(r->siblings.at(3), (std::vector<int>{1, 3}));
  EXPECT_EQ(r->siblings.at(0), (std::vector<int>{0, 2}));  // the node's, for the fallback
  EXPECT_NE(r->source.find("--affinity"), std::string::npos);
  EXPECT_NE(r->source.find(t.root()), std::string::npos);
}

TEST(SysfsCpuReader, WithoutAnOnlineFileListsTheCpuDirectories) {
  FakeTree t;
  t.mkdir("/sys/devices/system/cpu/cpu0");
  t.mkdir("/sys/devices/system/cpu/cpu1");
  t.mkdir("/sys/devices/system/cpu/cpu10");
  t.mkdir("/sys/devices/system/cpu/cpufreq");
  t.mkdir("/sys/devices/system/cpu/cpuidle");
  auto r = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->allowed, (std::vector<int>{0, 1, 10}));
}

TEST(SysfsCpuReader, AnAffinityOutsideTheOnlineCpusIsDroppedAndReported) {
  FakeTree t;
  t.cpus(range(0, 3), [](int c) { return std::vector<int>{c}; });
  auto r = SysfsCpuReader(t.root(), std::vector<int>{2, 3, 4, 5}).read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->allowed, (std::vector<int>{2, 3}));
  ASSERT_EQ(r->diagnostics.size(), 1u);
  EXPECT_NE(r->diagnostics[0].find("4-5"), std::string::npos);
}

TEST(SysfsCpuReader, NoCpusIsAnErrorNamingTheDirectory) {
  FakeTree t;
  auto r = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("/sys/devices/system/cpu under " + t.root()),
            std::string::npos)
      << r.error().message();
}

TEST(SysfsCpuReader, AMalformedSiblingFileIsAnErrorNamingIt) {
  FakeTree t;
  t.write("/sys/devices/system/cpu/online", "0-1\n");
  t.write("/sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "0,x\n");
  auto r = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  EXPECT_NE(r.error().message().find("/sys/devices/system/cpu/cpu1/topology/thread_siblings_list"),
            std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("position 3"), std::string::npos);
}

TEST(SysfsCpuReader, AMalformedOnlineFileIsAnErrorNamingIt) {
  FakeTree t;
  t.write("/sys/devices/system/cpu/online", "zero\n");
  auto r = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("/sys/devices/system/cpu/online"), std::string::npos);
}

TEST(SysfsCpuReader, ASiblingListWithoutItsOwnCpuGainsIt) {
  FakeTree t;
  t.write("/sys/devices/system/cpu/online", "0-1\n");
  t.write("/sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "0\n");
  auto r = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->siblings.at(1), (std::vector<int>{0, 1}));
  EXPECT_EQ(r->diagnostics.size(), 1u);
}

TEST(SysfsCpuReader, ADirectoryWhereAFileShouldBeIsAnError) {
  FakeTree t;
  t.mkdir("/sys/devices/system/cpu/online");
  auto r = SysfsCpuReader(t.root(), std::nullopt).read();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not a regular file"), std::string::npos);
}

std::vector<int> own_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> ids;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  }
  return ids;
}

TEST(HwlocCpuReader, ReadsThisProcessesAffinity) {
  auto r = HwlocCpuReader().read();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->allowed, own_affinity());
  EXPECT_FALSE(r->online.empty());
  EXPECT_EQ(r->source.rfind("hwloc ", 0), 0u) << r->source;
  for (const auto& [cpu, sibs] : r->siblings) {
    EXPECT_TRUE(std::binary_search(sibs.begin(), sibs.end(), cpu)) << cpu;
  }
}

TEST(HwlocCpuReader, AgreesWithTheSysfsReaderOnThisNode) {
  auto h = HwlocCpuReader().read();
  auto s = SysfsCpuReader("/", own_affinity()).read();
  ASSERT_TRUE(h.ok()) << h.error().message();
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(select_cores(*h, std::nullopt).usable_core_ids,
            select_cores(*s, std::nullopt).usable_core_ids);
  EXPECT_EQ(select_cores(*h, std::nullopt).threads_per_core,
            select_cores(*s, std::nullopt).threads_per_core);
}

// hwloc's PCI plugin, where the distribution installed it (libhwloc-plugins).
bool pci_plugin_installed() {
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu/hwloc", "/usr/lib/aarch64-linux-gnu/hwloc",
                          "/usr/lib/hwloc", "/usr/lib64/hwloc"}) {
    if (::access((std::string(dir) + "/hwloc_pci.so").c_str(), R_OK) == 0) return true;
  }
  return false;
}

// Each case reads in a process of its own (the reading is kept once per process, and
// hwloc loads its plugins at a process's first topology): gtest's "threadsafe" death
// tests start this binary again for the one test.
void in_a_fresh_process(const std::function<bool()>& body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(body() ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

// The reading, and what hwloc said of its plugins meanwhile (HWLOC_PLUGINS_VERBOSE:
// "Plugin descriptor `hwloc_pci' ready", "Plugin `hwloc_pci' is blacklisted ...").
std::string read_saying_plugins(bool* ok) {
  for (const char* v : {"HWLOC_PLUGINS_PATH", "HWLOC_COMPONENTS"}) ::unsetenv(v);
  ::setenv("HWLOC_PLUGINS_VERBOSE", "1", 1);
  std::FILE* said = std::tmpfile();
  int saved = ::dup(2);
  ::dup2(::fileno(said), 2);
  auto r = HwlocCpuReader().read();
  ::dup2(saved, 2);
  ::close(saved);
  *ok = r.ok() && !r->allowed.empty();
  std::string text;
  std::rewind(said);
  for (int c; (c = std::fgetc(said)) != EOF;) text += static_cast<char>(c);
  std::fclose(said);
  return text;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(HwlocCpuReaderDeathTest, LeavesOutThePluginsAndTheEnvironmentAsItWas) {
  if (!pci_plugin_installed()) GTEST_SKIP() << "hwloc's plugins are not installed";
  in_a_fresh_process([] {
    ::unsetenv("HWLOC_PLUGINS_BLACKLIST");
    auto v = HwlocCpuReader::unused_plugins(Env::from_process());
    if (!v) return false;
    Env::set_for_berth_only(v->first, v->second);
    bool ok = false;
    std::string said = read_saying_plugins(&ok);
    // Left out for berth, and not handed on to what it starts.
    return ok && has(said, "`hwloc_pci' is blacklisted") && !has(said, "`hwloc_pci' ready") &&
           !has(said, "`hwloc_gl' ready") && !has(said, "`hwloc_opencl' ready") &&
           !has(said, "`hwloc_xml_libxml' ready") &&
           !Env::from_process().has("HWLOC_PLUGINS_BLACKLIST");
  });
}

// Without the variable hwloc loads them (what the case above proves left out).
TEST(HwlocCpuReaderDeathTest, LoadsThePluginsUnlessAsked) {
  if (!pci_plugin_installed()) GTEST_SKIP() << "hwloc's plugins are not installed";
  in_a_fresh_process([] {
    ::unsetenv("HWLOC_PLUGINS_BLACKLIST");
    bool ok = false;
    std::string said = read_saying_plugins(&ok);
    return ok && has(said, "`hwloc_pci' ready");
  });
}

// The user's own choice of plugins stands, and stays in the environment.
TEST(HwlocCpuReaderDeathTest, KeepsTheUsersPluginChoice) {
  if (!pci_plugin_installed()) GTEST_SKIP() << "hwloc's plugins are not installed";
  in_a_fresh_process([] {
    ::setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl", 1);
    if (HwlocCpuReader::unused_plugins(Env::from_process())) return false;
    bool ok = false;
    std::string said = read_saying_plugins(&ok);
    const char* v = std::getenv("HWLOC_PLUGINS_BLACKLIST");
    return ok && has(said, "`hwloc_gl' is blacklisted") && has(said, "`hwloc_pci' ready") &&
           v != nullptr && std::string(v) == "hwloc_gl";
  });
}

}  // namespace
}  // namespace berth::topo
