// PMI_process_mapping: which node each rank of a job is on, in the one form MPICH reads
// (spec 07 §3.3).
//
// `(vector,(start,count,size),…)`: each block puts `size` consecutive ranks on each of
// the `count` nodes start, start+1, …, in rank order; when the blocks run out before the
// ranks do, MPICH starts again from the first block. One node with 4 ranks is
// `(vector,(0,1,4))`; 8 ranks round-robin on 4 nodes `(vector,(0,4,1))`. Node ids are
// numbered by first appearance in rank order, so they are dense and rank 0's node is 0:
// MPICH counts the highest id + 1 nodes, and restarts the blocks at the first one whose
// start is 0.
#pragma once

#include <cstddef>
#include <string>

#include "wireup/job_map.h"

namespace berth::wireup::pmi {

// The mapping of `map`: of the plain form (every run of ranks on one node a block,
// runs on consecutive nodes with equal sizes merged) and the repeating form (the same
// for one period of a cyclic layout), the one with fewer blocks, the plain one on a tie. Never
// empty for a job with ranks; may be long (one block per run of ranks) — callers compare it with
// the value size their clients accept.
std::string process_mapping(const JobMap& map);

// The longest mapping MPICH's PMI-1 client takes from a `get`: it cuts its value buffer
// to 1024 - kvsname_max - keylen_max - 30 = 674 bytes (with the maxima berth announces),
// terminating NUL included. PMI-2 clients take PMI2_MAX_VALLEN = 1024.
inline constexpr size_t kMaxMappingPmi1 = 673;
inline constexpr size_t kMaxMappingPmi2 = 1024;

}  // namespace berth::wireup::pmi
