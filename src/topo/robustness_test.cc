// Every parser in topo is fed bytes it was never meant to see: random, and valid
// inputs with bytes flipped, cut and repeated. None may crash, hang or throw; under
// the dev preset's sanitizers none may read out of bounds. (The machine parser also
// has a libFuzzer target, tests/fuzz/fuzz_machine.cc.)
#include <gtest/gtest.h>

#include <random>

#include "topo/catalog.h"
#include "topo/cpu_reader.h"
#include "topo/fake_tree_for_test.h"
#include "topo/gpus.h"
#include "topo/machine.h"
#include "topo/memory.h"
#include "util/idset.h"

namespace berth::topo {
namespace {

using testing::FakeTree;

// Deterministic mutations of `seed`, and random strings, `n` in all.
std::vector<std::string> mutations(const std::string& seed, int n) {
  std::mt19937 rng(12345);
  std::vector<std::string> out;
  static constexpr char kAlphabet[] = "0123456789,-:./ \n\t\x00\xff[]=\"#max";
  const std::string alphabet(kAlphabet, sizeof kAlphabet - 1);  // keeps the NUL byte
  for (int i = 0; i < n; ++i) {
    std::string s = seed;
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      size_t at = s.empty() ? 0 : rng() % s.size();
      switch (rng() % 4) {
        case 0:
          if (!s.empty()) s[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.insert(at, 1, static_cast<char>(rng() % 256));
          break;
        case 2:
          if (!s.empty()) s.erase(at, 1 + rng() % 16);
          break;
        case 3:
          s.insert(at, s.substr(at, rng() % 64));
          break;
      }
    }
    out.push_back(std::move(s));
  }
  for (int i = 0; i < n / 4; ++i) {
    std::string s(rng() % 512, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    out.push_back(std::move(s));
  }
  return out;
}

TEST(Robustness, StringParsersSurviveAnyBytes) {
  for (const std::string& s : mutations("0-3,8,128-255\n", 3000)) (void)idset::parse_ids(s);
  for (const std::string& s : mutations("MemTotal: 1189455872 kB\nMemFree: 1 kB\n", 2000)) {
    (void)parse_meminfo_total_kb(s);
  }
  for (const std::string& s : mutations("12:memory:/a/b\n0::/system.slice/x\n", 2000)) {
    (void)parse_proc_cgroup(s);
  }
  for (const std::string& s :
       mutations("24 1 0:22 /a /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw\n", 2000)) {
    (void)parse_mountinfo_cgroups(s);
  }
  for (const std::string& s : mutations("9223372036854771712\n", 1000)) {
    (void)parse_cgroup_limit(s);
  }
  for (const std::string& s : mutations("cpu_cores_count 0\nsimd_count 440\n", 1000)) {
    (void)parse_kfd_simd_count(s);
  }
  std::vector<std::string> notes;
  for (const std::string& s : mutations("0,1,GPU-abc,2.1", 1000)) {
    (void)parse_visible_devices(s, "X", &notes);
  }
}

TEST(Robustness, MachineParserSurvivesAnyBytes) {
  for (const MachineFile& f : Catalog::built_in_files()) {
    for (const std::string& s : mutations(f.text, 300)) {
      auto r = parse_machine(s, f.path);
      if (!r.ok()) {
        EXPECT_NE(r.error().message().find(f.path), std::string::npos);
      }
    }
  }
}

TEST(Robustness, ReadersSurviveGarbageFiles) {
  const char* files[] = {
      "/sys/devices/system/cpu/online",
      "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
      "/sys/devices/system/cpu/cpu1/topology/core_cpus_list",
      "/proc/meminfo",
      "/proc/self/cgroup",
      "/proc/self/mountinfo",
      "/sys/fs/cgroup/memory.max",
      "/sys/class/kfd/kfd/topology/nodes/1/properties",
      "/sys/class/drm/card0/device/vendor",
  };
  int i = 0;
  for (const std::string& junk : mutations("0-1\n0::/\nMemTotal: 1 kB\nsimd_count 1\n", 60)) {
    FakeTree t;
    for (const char* f : files) t.write(f, junk);
    t.write("/sys/devices/system/cpu/online", ++i % 2 ? "0-1\n" : junk);
    (void)SysfsCpuReader(t.root(), std::nullopt).read();
    Env env;
    env.set("CUDA_VISIBLE_DEVICES", junk);
    env.set("SLURM_MEM_PER_NODE", junk);
    (void)read_gpus(t.root(), env);
    (void)read_memory(t.root(), env);
  }
}

}  // namespace
}  // namespace berth::topo
