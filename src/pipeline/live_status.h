// What runs now, told from a pipeline's live board (live_board.h): `berth status`, its
// JSON (Python's berth.status() returns the same), and what a second run says when it
// finds the first one going on (spec 04 §7.6).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/live_board.h"

namespace berth::pipeline {

// The board of pipeline file `pipeline` (pipeline_dir_for(pipeline, cache)), judged.
// Fails (kNotFound, naming it) when there is no such file, else as read_board().
Result<BoardRead> read_pipeline_board(const std::string& pipeline, const std::string& cache);

// The status of `pipeline` from its board `read`, at `now_ms` (ms since the epoch):
//   {"pipeline", "board", "state": "running" | "ended" | "stale" | "none",
//    "run": {"pid", "host", "started", "for_s"} (null when state is "none"),
//    "running": [{"step", "node", "cores", "gpus", "since", "for_s", "output"}],
//    "waiting", "done", "total", "deferred", "ended" (time or null), "stale" (why or null)}
// A stale board's steps are not listed: nothing vouches for them.
nlohmann::ordered_json live_status_json(const std::string& pipeline, const BoardRead& read,
                                        int64_t now_ms);

// The same for a person: a line for the run, one per running step, one for what waits;
// or "nothing is running" with when the last run ended, or why the board is stale.
std::string live_status_text(const std::string& pipeline, const BoardRead& read, int64_t now_ms);

// "pid 4242 on node7, running since 12:03:04Z (2m 05s)": the run a board names.
std::string run_holder_text(const Board& b, int64_t now_ms);

}  // namespace berth::pipeline
