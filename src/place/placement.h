// Placement: where one launch goes (spec 02 §1).
//
// A placement names the nodes a launch may use, one core set per node (aligned with
// `nodes`; core numbers are node-local, so the same numbers on two nodes is the
// ordinary case), and a GPU total for the whole launch. GPUs are a per-launch total,
// not a count per task, because only a total confines a launch (measured on both GPU
// machines placement was validated on); the total defaults to none, and none is
// rendered as an explicit request for no GPUs, because an unstated GPU requirement is
// read by Slurm as a claim on every GPU of the node. Where nothing assigns GPUs (PALS,
// the local node), the caller's chosen device ids travel with the placement, since
// only the caller sees every launch running at once.
//
// Memory is deliberately not here: a memory figure renders into an option that is
// inert on one Slurm and a kill switch on another. A cap is a separate argument
// (MemoryCap), absent unless given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/gpu_identity.h"
#include "util/idset.h"
#include "util/result.h"

namespace berth::place {

struct Placement {
  std::vector<std::string> nodes;          // host names, as the allocation names them
  std::vector<std::vector<int>> cores;     // one ascending core-id set per node
  int gpus = 0;                            // GPU total for the launch; 0 = none (explicit)
  std::vector<std::string> gpu_ids;        // device ids where nothing assigns GPUs
  // The variable a launch on its node gives gpu_ids in (CUDA_VISIBLE_DEVICES,
  // ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK), from the pool; "" when the node has none.
  std::string gpu_variable;
  // Which GPU each of gpu_ids is, where the pool knew (model, UUID, driver): what a
  // step's provenance records. Not part of its shape.
  std::vector<topo::GpuIdentity> gpu_devices;
  // What the grant could not do as it should: cores not next to its GPUs, say. Said
  // with the launch; not part of its shape.
  std::vector<std::string> notes;

  // Checks the shape: at least one node; one non-empty core set per node, each
  // ascending with no repeats and no negative id; no node named twice; gpus >= 0;
  // gpu_ids empty or exactly `gpus` ids (distinct on a one-node placement; ids are
  // node-local, so several nodes may repeat them). Errors say which node or field.
  Result<void> validate() const;
};

// A per-node memory cap in MB, stated on purpose and only then: rendered by default, it
// would be inert on one Slurm and a kill switch on another.
using MemoryCap = std::optional<int64_t>;

// How tasks land on a placement's nodes when they fill each node in turn (Slurm
// block distribution): node i takes up to floor(|cores_i| / cpus_per_task) tasks.
// Returns the task count per node, or an error when the cores cannot hold `tasks`
// tasks of `cpus_per_task` cores each, or when a node would get none (a placement
// that names a node it does not use reserves it for nothing).
Result<std::vector<int>> fill_nodes_in_turn(const Placement& p, int tasks, int cpus_per_task);

// A core set named on the command line (--cores, --cpu-set): the id-list codec's
// grammar (util/idset.h), ids 0..idset::kMaxCpuId, and never empty, since a launch
// bound to no core cannot run. Errors read "<origin>: position N: ..." or
// "<origin>: an empty id list".
Result<std::vector<int>> parse_ids(std::string_view text, std::string_view origin);


}  // namespace berth::place
