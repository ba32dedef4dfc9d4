// Context: what every placing command works from — the environment, the allocation,
// the machine description, this node's resources and the launcher — gathered from
// one set of flags shared by `berth machine` and `berth place`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "alloc/discover.h"
#include "place/launcher.h"
#include "place/pool.h"
#include "topo/catalog.h"
#include "topo/describe.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::cli {

// Flags that choose the allocation (shared with `berth alloc`).
struct AllocFlags {
  std::string env_file;
  std::vector<std::string> hosts;
  std::string hostfile;
  std::string default_hostfile;
  std::string flux_r;
  std::string simulate;
  int64_t multiplier = 1;
  std::string slurm_slots = "tasks";
  bool keep_fqdn = false;
};
void add_alloc_flags(CLI::App& app, AllocFlags& f);

// Flags that choose the machine, the node reading and the launcher.
struct MachineFlags {
  std::string machine;          // --machine NAME; "" = detect
  std::string sysfs_root;       // --sysfs-root DIR; "" = this node
  std::string affinity;         // --affinity LIST
  std::string launcher = "auto";
  std::string slurm_version;    // --slurm-version X.Y: fake the detected version
};
void add_machine_flags(CLI::App& app, MachineFlags& f);

struct Context {
  Env env;
  alloc::Allocation allocation;
  topo::Catalog catalog;
  const topo::MachineDescription* machine = nullptr;
  std::string machine_reason;
  topo::NodeResources node;
  place::Launcher launcher;
  std::string launcher_reason;  // why this launcher kind

  // The memory a job may use per node, and where the figure came from: the machine
  // description's when it ships one (the kernel's MemTotal is the hardware total, not
  // what a job may use), else what this node reports.
  std::optional<int64_t> memory_per_node_mb() const;
  std::string memory_provenance() const;
  // The pool's view of the allocation: every up node with this node's usable cores
  // (held to the node's slots when the scheduler gave them), GPUs and memory.
  std::vector<place::PoolNode> pool_nodes() const;
  // This node's name in the allocation ("" when the allocation does not hold it).
  std::string here() const;
  // Refuses (kRefused) the first of `nodes` that the launcher cannot reach from here
  // (place::unreachable): nothing may run on this node under another node's name.
  Result<void> check_reachable(const std::vector<std::string>& nodes) const;
};

// Reads the environment (or --env-file), discovers the allocation, chooses the
// machine, describes this node and detects the launcher. Errors name the input.
Result<Context> build_context(const AllocFlags& a, const MachineFlags& m);

// Env from --env-file, or the process's.
Result<Env> read_env(const std::string& env_file);

// berth's own environment, read from the process once (Env::from_process) for every
// command: what launches and probes run with, whatever --env-file says.
const Env& process_env();

// How commands ask a launcher or a tool for its version: a pipeline::CaptureProbe over
// process_env(), made on first use.
place::VersionProbe& version_probe();

// Discovery with the flags above.
Result<alloc::Allocation> discover_allocation(const Env& env, const AllocFlags& f);

}  // namespace berth::cli
