// InFlight: the executor's count of the steps it has started and not yet heard the end
// of, and of those whose processes still run.
//
// The two differ: a step's placement goes back to the pool as soon as its processes end
// (StepRunner::Events::exited), and the next step starts on those cores while the first
// is still storing its outputs and writing its row. `-j` caps the steps in flight — a
// step being published still holds its staging directory and a runner thread — while
// the progress line says how many steps are running: only those whose processes have
// not ended (spec 04 §7), never more than the cores hold unless steps need no core.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace berth::pipeline {

class InFlight {
 public:
  // Room for steps 0 .. n-1, none started.
  void resize(size_t n) { state_.assign(n, kIdle); }

  // Step i was handed to its runner.
  void start(size_t i) {
    if (state_[i] != kIdle) return;
    state_[i] = kRunning;
    ++in_flight_;
    ++running_;
    most_ = std::max(most_, in_flight_);
  }
  // Step i's processes ended; it may still be publishing. Said once per start.
  void exited(size_t i) {
    if (state_[i] != kRunning) return;
    state_[i] = kPublishing;
    --running_;
  }
  // The runner is done with step i (its processes ended, if exited() was not said).
  void done(size_t i) {
    if (state_[i] == kIdle) return;
    if (state_[i] == kRunning) --running_;
    state_[i] = kIdle;
    --in_flight_;
  }

  bool started(size_t i) const { return state_[i] != kIdle; }
  size_t in_flight() const { return in_flight_; }  // started, not done
  size_t running() const { return running_; }      // started, processes not ended
  size_t most() const { return most_; }            // the most in flight at once

 private:
  enum State : char { kIdle, kRunning, kPublishing };
  std::vector<State> state_;
  size_t in_flight_ = 0;
  size_t running_ = 0;
  size_t most_ = 0;
};

}  // namespace berth::pipeline
