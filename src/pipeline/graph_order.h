// Ordering a graph's steps (spec 04 §3.4, §3.5): each after every step it reads from,
// ties broken by expansion order, so the order is a function of the file alone; a
// cycle is an error listing the steps around it in the direction data flows.
#pragma once

#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "util/result.h"

namespace berth::pipeline {

// `steps` (in expansion order, deps resolved) in topological order, every index
// remapped. Fails (kInvalidInput) on a cycle, naming `path` and the steps around it:
// "p.toml: cycle: a -> b -> a (data flows left to right: …)".
Result<std::vector<Step>> topological(std::vector<Step> steps, const std::string& path);

}  // namespace berth::pipeline
