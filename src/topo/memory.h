// Memory: how much memory (MB) a job on this node may use, and where that came from.
//
// The figure is the memory a job may actually use, not the hardware total: the two
// differ by enough to matter, and it is the smaller one a caller must not exceed. So
// the sources are tried from the most binding to the least:
//   1. the process's cgroup limit (v2 memory.max, or v1 memory.limit_in_bytes), the
//      smallest along its path to the mount root, since a parent's limit binds its
//      children; "max" and v1's near-2^63 "unlimited" are no limit, and neither is one
//      at or above MemTotal;
//   2. what the scheduler says the job has on the node: Slurm's SLURM_MEM_PER_NODE,
//      or SLURM_MEM_PER_CPU times SLURM_CPUS_ON_NODE (PBS publishes nothing reliable);
//   3. the kernel's MemTotal — what the hardware holds, which is not the answer
//      (Aurora: MemTotal 1161578 MB against a site figure of 960000).
//      It is reported with that warning, so a caller prefers the machine
//      description's memory_per_node where there is one.
// MB is MiB (2^20 bytes), the unit Slurm's --mem and memory_per_node are in; figures
// are rounded down.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::topo {

enum class MemorySource { kNone, kCgroup, kScheduler, kKernel };

struct Memory {
  std::optional<int64_t> mb;  // absent when no source could say
  MemorySource source = MemorySource::kNone;
  // "cgroup v2 memory.max (/sys/fs/cgroup/.../memory.max)", "env SLURM_MEM_PER_NODE",
  // "/proc/meminfo MemTotal".
  std::string provenance;
  std::vector<std::string> diagnostics;
};

// Reads /proc/self/cgroup, /proc/self/mountinfo, the cgroup files and /proc/meminfo
// under `root`, and Slurm's variables from `env`. A missing file is not an error (that
// source is absent); a malformed one is, naming it.
Result<Memory> read_memory(const std::string& root, const Env& env);

// The parsers read_memory() uses, exposed for tests and fuzzing. Messages name the
// line, not the file (callers add it).

// MemTotal in kB from /proc/meminfo; nullopt when there is no MemTotal line.
Result<std::optional<int64_t>> parse_meminfo_total_kb(std::string_view text);

// The process's cgroup paths from /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines).
struct CgroupPaths {
  std::optional<std::string> v2;         // the "0::PATH" line
  std::optional<std::string> v1_memory;  // the line whose controllers include memory
};
Result<CgroupPaths> parse_proc_cgroup(std::string_view text);

// A cgroup filesystem mount from /proc/self/mountinfo.
struct CgroupMount {
  bool v2 = false;          // cgroup2; else a v1 hierarchy with the memory controller
  std::string root;         // the cgroup path mounted there (field 4)
  std::string mount_point;  // where (field 5), octal escapes decoded
};
// The cgroup2 mounts and v1 memory mounts, in file order.
Result<std::vector<CgroupMount>> parse_mountinfo_cgroups(std::string_view text);

// A memory.max or memory.limit_in_bytes value in bytes; nullopt for "max".
Result<std::optional<uint64_t>> parse_cgroup_limit(std::string_view text);

}  // namespace berth::topo
