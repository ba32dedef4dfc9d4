// Staging: the directories steps run in (spec 04 §7, step 3).
//
// Each step runs in an empty directory of its own, <staging>/<pid>.<n>, holding in/
// (its inputs, linked in) and out/ (what it must write). Directories are reused: a
// step's is emptied when it ends and handed to the next, since making and removing
// thousands costs more than the steps. One whose leftovers cannot be removed (a step
// made something unwritable) is dropped rather than reused. Directories of processes
// of this host that no longer exist are swept at the start of a run. Thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "util/result.h"

namespace berth::pipeline {

class Staging {
 public:
  explicit Staging(std::string root) : root_(std::move(root)) {}
  ~Staging();  // removes the directories kept for reuse

  // An empty directory with in/ and out/: a reused one, or a new one.
  Result<std::string> acquire();
  // Empties `dir` for the next step, or removes it when it cannot be emptied.
  void release(std::string dir);
  // Removes directories left by processes of this host that are gone.
  void sweep_stale();

 private:
  std::string root_;
  std::atomic<uint64_t> seq_{0};
  std::mutex mu_;
  std::vector<std::string> free_;
};

// Puts the user's file `src` in a staging directory as `dst` (see staging.cc). True
// when it was hard-linked (its ctime changed), false for a symlink or a copy.
Result<bool> stage_input(const std::string& src, const std::string& dst);

}  // namespace berth::pipeline
