// The live board a `berth run` keeps (pipeline/live_board.h, spec 04 §7.6), and what
// the run says when it finds another run of its pipeline going on.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pipeline/live_board.h"
#include "pipeline/report.h"

namespace berth::cli {

// The board a run of `pipeline` keeps, not yet begun: it is written from begin(), once
// the run holds the cache's index, and must be ended (destroyed) before the session
// lets the index go. Null for a dry run, which runs nothing, and for a worker without
// --cache, whose board would be every worker's. Every other run that is on with the
// same cache directory (pipeline.toml's and other.toml's of one folder, or this
// pipeline's) holds the cache's index, which this run waits for: each is said on
// stderr first (which pipeline, pid, host, since when).
std::unique_ptr<pipeline::LiveBoard> run_live_board(const std::string& pipeline,
                                                    const std::string& cache, bool worker,
                                                    bool dry_run);

// A progress sink that feeds `board` and then `line` (either may be null).
std::function<void(const pipeline::Progress&)> with_board(
    pipeline::LiveBoard* board, std::function<void(const pipeline::Progress&)> line);

}  // namespace berth::cli
