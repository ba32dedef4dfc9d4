// Context: what every placing caller works from — the environment, the allocation,
// the machine description, this node's resources and the launcher — gathered from one
// set of options. The CLI fills them from its flags (`berth machine`, `berth place`,
// `berth run`), the Python module from keyword arguments (python/); both then ask the
// same questions of the same Context, so the two cannot disagree.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloc/discover.h"
#include "place/launcher.h"
#include "place/node_offer.h"
#include "place/placement.h"
#include "place/pool.h"
#include "place/render.h"
#include "topo/catalog.h"
#include "topo/describe.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::place {

// What chooses the allocation (the CLI's --host, --hostfile, ... flags; spec 01).
struct AllocationOptions {
  std::vector<std::string> hosts;  // each a comma-separated list
  std::string hostfile;
  std::string default_hostfile;  // "" = $BERTH_DEFAULT_HOSTFILE, else the system's
  std::string flux_r;
  std::string simulate;
  int64_t multiplier = 1;
  std::string slurm_slots = "tasks";  // "tasks" (SLURM_TASKS_PER_NODE) or "cpus"
  bool keep_fqdn = false;
};

// What chooses the machine, the node reading and the launcher (--machine, ...).
struct MachineOptions {
  std::string machine;            // "" = detect
  std::string sysfs_root;         // "" = this node
  std::string affinity;           // stand-in for this process's CPU affinity ("0-3,8")
  std::string launcher = "auto";  // auto, srun, pals or local
  std::string slurm_version;      // "X.Y": fake the detected version
};

// The host berth runs on: gethostname() and, with hwloc, the number of physical cores
// that intersect this process's CPU affinity (a core counts once however many of its
// hardware threads are allowed); sched_getaffinity's CPU count when hwloc fails.
// Computed once per process: the topology is loaded once, not per caller.
alloc::LocalHost local_host();

// Discovery with the options above, reading `env` (the process's, a --env-file's, a
// Python mapping's) for the scheduler's variables and $BERTH_DEFAULT_HOSTFILE.
Result<alloc::Allocation> discover_allocation(const Env& env, const AllocationOptions& o);

struct Context {
  Env env;
  alloc::Allocation allocation;
  topo::Catalog catalog;
  const topo::MachineDescription* machine = nullptr;  // points into `catalog`
  std::string machine_reason;
  topo::NodeResources node;
  Launcher launcher;
  std::string launcher_reason;  // why this launcher kind

  Context() = default;
  // `machine` points into `catalog`: a copy would point into the original's.
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&&) = default;
  Context& operator=(Context&&) = default;

  // The memory a job may use per node, and where the figure came from: the machine
  // description's when it ships one (the kernel's MemTotal is the hardware total, not
  // what a job may use), else what this node reports.
  std::optional<int64_t> memory_per_node_mb() const;
  std::string memory_provenance() const;
  // What this node has for work: its usable cores, GPUs and memory (node_offer.h).
  NodeOffer offer() const;
  // The pool's view of the allocation: every up node with the usable cores (held to
  // the node's slots when the scheduler gave them), GPUs and memory it offers — as
  // `offers` has it (read on the node itself, spec 08 §4), else this node's.
  std::vector<PoolNode> pool_nodes(const std::map<std::string, NodeOffer>& offers = {}) const;
  // This node's name in the allocation ("" when the allocation does not hold it).
  std::string here() const;
  // Refuses (kRefused) the first of `nodes` that the launcher cannot reach from here
  // (place::unreachable): nothing may run on this node under another node's name.
  Result<void> check_reachable(const std::vector<std::string>& nodes) const;
  // Refuses (kRefused) the first of `nodes` that is not an up node of the allocation,
  // by its name or as its source wrote it: "node 'x' is not in the slurm allocation
  // (nid[001-004])".
  Result<void> check_nodes(const std::vector<std::string>& nodes) const;
  // The core ids a placement may name on `node` (the pool's view); empty for a node
  // the allocation does not hold.
  std::vector<int> usable_cores(std::string_view node) const;

  // A placement a caller names, checked against the allocation: `nodes` (empty: this
  // node), and `cores` either empty (every usable core of each node), one set (the
  // same ids on every node) or one set per node. Refuses (kRefused) a node outside the
  // allocation and a core not usable on its node; fails (kInvalidInput) when this node
  // is meant but not in the allocation, or on a count of core sets that matches
  // neither. GPUs are the caller's to fill in.
  Result<Placement> named_placement(std::vector<std::string> nodes,
                                    std::vector<std::vector<int>> cores) const;

  // The launch of `command` as `tasks` tasks of `cpus_per_task` cores each, with the
  // GPU visibility variable the local launcher sets from this node's GPU vendor.
  LaunchSpec launch_spec(int tasks, int cpus_per_task, MemoryCap memory_cap,
                         std::vector<std::string> command) const;
};

// Reads nothing but `env` for the allocation, and this node (or options.sysfs_root)
// for its description; chooses the machine; detects the launcher with `probe` (once
// per process and kind) unless options.slurm_version stands in for it. Errors name
// the input (the CLI's flag names: --affinity, --slurm-version).
Result<Context> build_context(Env env, const AllocationOptions& a, const MachineOptions& m,
                              VersionProbe& probe);

// What this node has for work (Context::offer), read without an allocation: what a
// berth agent says of its node (spec 08 §4). Errors as build_context's.
Result<NodeOffer> node_offer_here(Env env, const MachineOptions& m);

// What `berth machine --format json` prints (spec 02 §5): the machine, the launcher
// and why, this node's cores, GPUs and memory, the allocation's nodes, and what a
// placement and an MPI launch get here.
nlohmann::ordered_json machine_json(const Context& c);

// What `berth place --format json` prints for one rendered launch (spec 02).
nlohmann::ordered_json rendering_json(const Rendered& r, const std::optional<Placement>& p,
                                      const LaunchSpec& s, const Launcher& l);

}  // namespace berth::place
