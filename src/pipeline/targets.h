// Targets: the part of a graph that `berth run PIPELINE NAME…` runs (spec 04 §7.2) —
// the steps named (or matched by shell-style patterns) and every step they need,
// nothing else, as `make target` builds a target and its prerequisites.
#pragma once

#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "util/result.h"

namespace berth::pipeline {

// Whether `target` is a pattern (holds '*', '?' or '['), matched with fnmatch(3)
// against expanded step names; otherwise it names one step exactly.
bool is_target_pattern(const std::string& target);

// The steps of `g` that `targets` select, and every step they read from, directly or
// not, in `g`'s order, with every index remapped: a graph of its own. Empty `targets`
// selects everything. Fails (kInvalidInput) naming the first target that names or
// matches no step, and the pipeline file.
Result<Graph> select_targets(Graph g, const std::vector<std::string>& targets);

}  // namespace berth::pipeline
