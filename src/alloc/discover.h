// discover: the one call that answers "what was I given?".
//
// Asks each source in priority order (source.h) until one owns the allocation,
// inserts its nodes into a NodeTable, applies the multiplier, then — when the allocation
// came from somewhere other than the user's own --host/--hostfile — lets
// --host/--hostfile filter it: they select nodes and may lower slot counts, never add
// a node or a slot (spec 01 §5: under a scheduler a hostfile is a filter; one naming a
// node outside the allocation is refused).
#pragma once

#include <string>
#include <vector>

#include "alloc/node.h"
#include "alloc/source.h"
#include "util/result.h"

namespace berth::alloc {

struct Allocation {
  std::string owner;             // the owning source's name
  bool scheduler_owned = false;  // an external resource manager owns these nodes
  std::string job_id;            // the scheduler's job id, or empty
  // Inside a job step (Slurm's srun), its id: the nodes are the step's and each node's
  // slots the CPUs the step was given there (spec 01 §2.2). Empty: the whole job.
  std::string job_step;
  std::vector<Node> nodes;       // node-table order
  int64_t total_slots = 0;       // sum over nodes that are up

  // The nodes in state kUp, in node-table order.
  std::vector<const Node*> up_nodes() const;
};

// The sources in the order they are asked.
const std::vector<SourceInfo>& sources();

// Discovers the allocation. Errors name the variable, flag or file:line that was
// wrong: kInvalidInput for input that does not parse, kRefused for a filter naming a
// node outside the allocation or two equal-priority sources both claiming one.
Result<Allocation> discover(const Input& in);

}  // namespace berth::alloc
