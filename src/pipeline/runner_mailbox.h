// RunnerMailbox: what a step runner's threads tell the run's one scheduling thread —
// a step's processes ended (its placement is free), its outputs are known (dependents
// may start), it is done — queued under a lock and signalled through a pipe, so that
// the scheduler waits in poll(2) beside the cancel descriptor and never shares its
// structures with a runner thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/step_runner.h"
#include "util/result.h"

namespace berth::pipeline {

class RunnerMailbox {
 public:
  RunnerMailbox() = default;
  ~RunnerMailbox();
  RunnerMailbox(const RunnerMailbox&) = delete;
  RunnerMailbox& operator=(const RunnerMailbox&) = delete;

  // Makes the pipe; fails when none can be made.
  Result<void> open();
  // Readable when something was posted (poll it; take() drains it).
  int fd() const { return pipe_[0]; }

  // The events of step `step`, granted `grant`, posting here.
  StepRunner::Events events_for(size_t step, uint64_t grant);

  struct Mail {
    std::vector<StepResult> done;
    // (step, grant) for each step whose processes have ended
    std::vector<std::pair<size_t, uint64_t>> exited;
    std::vector<std::pair<size_t, std::map<std::string, StepRecord::Output>>> known;
  };
  // Everything posted so far, the pipe drained.
  Mail take();

 private:
  void wake();

  std::mutex mu_;
  Mail mail_;
  int pipe_[2] = {-1, -1};
};

}  // namespace berth::pipeline
