// describe(): what one node has, as berth will place work on it.
//
// NodeResources is the node half of placement (ARCHITECTURE: hwloc / sysfs / cgroup /
// GPUs -> topo::describe -> NodeResources): the usable core ids and hardware threads
// (cores.h), the GPUs this process may use (gpus.h) and the memory a job may use
// (memory.h), each with where it came from, and every diagnostic the readers raised.
// A diagnostic is something the caller should show or log — fewer cores than
// configured, an affinity not believed, MemTotal standing in for a real figure — and
// never a reason to stop; an unreadable or malformed input is an Error instead.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "topo/cores.h"
#include "topo/cpu_reader.h"
#include "topo/gpu_identity.h"
#include "topo/gpus.h"
#include "topo/memory.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::topo {

struct NodeResources {
  // One CPU id per physical core, ascending, held to configured_cores.
  std::vector<int> usable_core_ids;
  int threads_per_core = 1;
  // The count usable_core_ids was held to; absent when nothing was configured.
  std::optional<int> configured_cores;
  // Where the ids came from: the reader ("hwloc 2.9.0", "/sys/devices/system/cpu under
  // /tmp/x, affinity from --affinity") and the basis the policy settled on.
  std::string cores_provenance;
  CoreBasis core_basis = CoreBasis::kAffinity;
  // Physical cores the process's affinity covered, before any cap.
  int affinity_cores = 0;

  Gpus gpus;
  // Each GPU the node shows, by the driver's word (gpu_identity.h), in the node's
  // numbering: gpus.ids are those of them this process may use.
  std::vector<GpuIdentity> gpu_devices;
  Memory memory;

  // Everything worth telling the user, from every reader, in order: CPUs, GPUs,
  // memory. (gpus.diagnostics and memory.diagnostics are included here.)
  std::vector<std::string> diagnostics;
};

struct DescribeOptions {
  // Root of the node's files (GPUs, cgroup, meminfo): "/" on the real node, the
  // directory given by --sysfs-root in tests.
  std::string root = "/";
  // The machine's cores_per_node (MachineDescription::configured_cores()); absent for
  // a node whose cores are detected, which is then not capped.
  std::optional<int> configured_cores;
};

// Reads the CPUs with `cpus`, and GPUs and memory under options.root and from `env`.
// Fails when any reader fails; the message names the file or variable.
Result<NodeResources> describe(const CpuReader& cpus, const Env& env,
                               const DescribeOptions& options);

// The CPU reader for a root and an optional affinity: hwloc for this node (root "/"
// and no affinity), the sysfs reader otherwise — `--affinity` alone reads this node's
// sysfs with the given affinity.
std::unique_ptr<CpuReader> make_cpu_reader(const std::string& root,
                                           std::optional<std::vector<int>> affinity);

}  // namespace berth::topo
