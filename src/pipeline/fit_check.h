// The fit check: which steps can never run here (spec 04 §7 step 1). Each distinct
// resource request is tried once against an empty pool of the run's nodes; a step
// whose request cannot be granted even then (more GPUs, cores or nodes than the
// allocation has) is refused with the pool's reason, and only it and what reads from
// it are not run: one `gpus = 1` step on a laptop does not stop the other steps.
#pragma once

#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "place/pool.h"

namespace berth::pipeline {

// What step `s` asks the pool for.
place::Request request_of(const Step& s);

struct NeverFits {
  size_t step = 0;     // index into the graph's steps
  std::string reason;  // "can never run here: …"
};

// Every step of `g` that cannot fit in an empty pool of `nodes`, in graph order. A step
// known only by its settled entry (Step::from_record) asked for nothing here and is not
// checked.
std::vector<NeverFits> never_fitting(const Graph& g, const std::vector<place::PoolNode>& nodes);

}  // namespace berth::pipeline
