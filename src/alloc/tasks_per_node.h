// Slurm's per-node count lists: SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE.
//
//   "2(x3),1"  -> {2, 2, 2, 1}
//   "4"        -> {4}
//
// Grammar (spec 01 §2.2): comma-separated items, each COUNT or COUNT(xREPEAT), COUNT
// and REPEAT decimal, REPEAT >= 1. Whitespace is not allowed. Failure cases
// (kInvalidInput, message names the 1-based position): empty input or item, missing
// ')' or 'x', zero repeat, a count above 2^31-1, a total expansion above `max_items`.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::alloc {

Result<std::vector<int64_t>> parse_tasks_per_node(std::string_view text,
                                                  size_t max_items = 10'000'000);

}  // namespace berth::alloc
