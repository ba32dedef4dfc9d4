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
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "util/result.h"

namespace berth::pipeline {

class Staging {
 public:
  explicit Staging(std::string root) : root_(std::move(root)) {}
  ~Staging();  // removes the directories kept for reuse

  // An empty directory with in/ and out/: a reused one, or a new one.
  Result<std::string> acquire();
  // Empties `dir` for the next step, or removes it when it cannot be emptied. With
  // `left`, the names it removed are added there, relative to `dir`, as
  // undeclared_files() gives them (leftovers.h): every top-level entry but in/ and out/,
  // and every entry of out/ ("plot.png", "tmp/", "out/extra.csv"), unsorted — found
  // while emptying, at no cost of its own.
  void release(std::string dir, std::vector<std::string>* left = nullptr);
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

// Where each input item of a step goes in its staging directory, relative to it (spec
// 04 §6), input name -> one path per item: in/<its name> (`in/a.fq.gz`, `in/counts`),
// so that files that go together (`x.bam`, `x.bam.bai`) are side by side as their
// names say; when two items of the step share a name, each of them goes to
// in/<input>.<k>/<its name> instead. A function of keyed things only: the input's name,
// the item's index and its staged name. Files beside the pipeline (beside.h) are staged
// at their own paths and have no entry.
std::map<std::string, std::vector<std::string>> staged_layout(
    const std::map<std::string, Input>& inputs);

// `relative` (a staged_layout() path, or a file beside the pipeline's, beside.h) in
// staging directory `stage`, with the directories it needs below in/ made (an error
// making them shows when the file is put there).
std::string staged_path(const std::string& stage, const std::string& relative);

}  // namespace berth::pipeline
