// Per-rank GPUs (spec 03 §2): each rank of a job its own devices, in its vendor's
// visibility variable, as MPICH's -gpus-per-proc, srun's --gpus-per-task and PRRTE's
// --map-by device=gpu give them — the ones nearest its bound core where the node says
// which cores each GPU sits next to. Never two ranks on one device: a job asking for
// more than there are is refused before anything starts.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::launch {

struct RankGpus {
  int per_rank = 0;                 // devices per rank; 0: no per-rank GPUs
  std::string variable;             // CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ...
  std::vector<std::string> ids;     // the devices the job may give, in the variable's syntax
  // Per id (may be shorter, or empty), the CPU ids next to that device.
  std::vector<std::vector<int>> local_cores;
};

// The devices of each rank, given each rank's bound CPUs (`rank_cpus`, one entry per
// rank; empty: unbound). Each rank first the free devices next to its first bound CPU,
// then, rank by rank, the lowest free up to `per_rank`; in id order within a rank.
// kRefused when ranks x per_rank exceeds the devices, kInvalidInput without a variable.
Result<std::vector<std::vector<std::string>>> assign_rank_gpus(
    const RankGpus& gpus, const std::vector<std::vector<int>>& rank_cpus);

// The variables that give a process exactly `ids` of `variable` (empty ids: none, set
// empty), over an environment `around` it: the variable, and with CUDA's, when nothing
// around it numbered the devices (no CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER set),
// CUDA_DEVICE_ORDER=PCI_BUS_ID — berth numbers GPUs in bus order, as the driver lists
// them, and CUDA numbers them fastest first unless told; with Intel tile ids, the
// hierarchy they are written in (topo::gpu_hierarchy_env).
std::vector<std::pair<std::string, std::string>> gpu_env(const std::string& variable,
                                                         const std::vector<std::string>& ids,
                                                         const Env& around);

}  // namespace berth::launch
