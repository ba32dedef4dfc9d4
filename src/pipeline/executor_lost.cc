// A step lost with its node (executor_state.h, Executor::requeue_lost; spec 08 §5).
//
// When the agent that ran a step on another node is lost — its node failed, it was
// killed, its launcher ended — the step did not fail: nobody knows how it ended, and
// nothing of it was stored. The node leaves the pool for the rest of the run, so that
// nothing more is placed where nothing can run, and the step is queued again at once,
// to be placed on a node that is still there. A step that only the lost node could
// hold is then refused by the pool, naming the node.
#include "pipeline/executor_state.h"

namespace berth::pipeline::scheduler {

bool Executor::requeue_lost(StepResult& d) {
  if (d.lost_node.empty()) return false;
  pool_.withdraw(d.lost_node);
  if (cancelled_) {
    // The run is ending: the step ends as every other running step does.
    d.record.state = StepState::kCancelled;
    d.record.reason = "cancelled";
    return false;
  }
  if (stop_new_) return false;  // --fail-fast: it ends failed, saying why
  size_t i = d.step;
  // The attempt was not the step's own: it neither uses up its retries nor lengthens
  // the wait before one.
  --attempts_[i];
  queued_[shape_of(g_.steps[i])].push_back(i);
  ++queued_count_;
  return true;
}

}  // namespace berth::pipeline::scheduler
