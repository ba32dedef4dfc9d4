// `berth log -f`: a running step's output followed as it comes, from the file the
// pipeline's live board names for it (pipeline/live_board.h, spec 04 §7.6).
#pragma once

#include <optional>
#include <string>

namespace berth::cli {

// Follows step `step` of the run on the board in `pipeline_dir`: prints what it has
// written so far, then what it writes, until its processes end. Returns its exit status
// (the shell's convention: 0, its code, 128 + a signal); 1 when its run died under it
// (the board turned stale) or ended before the step's status could be read. nullopt
// when the step is not running now (no live board, no such running step): the caller
// prints its stored log instead. `stored` is set when the step ended and its run with
// it before its output file was seen (a step that printed quickly, or nothing): its
// status is returned, and what it printed is its stored log, for the caller to print.
std::optional<int> follow_running_step(const std::string& pipeline_dir, const std::string& step,
                                       bool* stored);

}  // namespace berth::cli
