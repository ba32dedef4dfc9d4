#include "launch/escalation.h"

#include <signal.h>
#include <unistd.h>

#include "launch/guard.h"

namespace berth::launch {

std::vector<EscalationStep> escalation_table(std::chrono::milliseconds grace) {
  // A negative grace would mean "SIGKILL before SIGTERM had a chance"; the caller
  // meant none.
  if (grace.count() < 0) grace = std::chrono::milliseconds(0);
  // SIGCONT first: a stopped process (Ctrl-Z, a debugger, SIGSTOP from a batch system)
  // keeps SIGTERM pending and would sit out the whole grace period; SIGTERM right
  // after it, so a well-behaved rank can clean up; SIGKILL once the grace is spent.
  return {
      {SIGCONT, std::chrono::milliseconds(0)},
      {SIGTERM, std::chrono::milliseconds(0)},
      {SIGKILL, grace},
  };
}

void Escalation::begin(std::chrono::milliseconds grace) {
  if (begun_) return;
  begun_ = true;
  steps_ = escalation_table(grace);
  next_ = 0;
  next_at_ = clock_->steady() + (steps_.empty() ? std::chrono::milliseconds(0) : steps_[0].after);
}

std::vector<int> Escalation::due() {
  std::vector<int> out;
  // Each step's delay counts from when the one before it fell due, as the table says.
  while (begun_ && next_ < steps_.size() && clock_->steady() >= next_at_) {
    out.push_back(steps_[next_].signal);
    ++next_;
    if (next_ < steps_.size()) next_at_ = clock_->steady() + steps_[next_].after;
  }
  return out;
}

std::optional<std::chrono::steady_clock::time_point> Escalation::next_at() const {
  if (!begun_ || next_ >= steps_.size()) return std::nullopt;
  return next_at_;
}

bool signal_group(int pgid, int sig) {
  // Spec 03 §6: never hand a pid <= 0 to kill. kill(0) and kill(-0) signal the caller's
  // own group (berth itself, its other ranks and the shell's job), and kill(-1) every
  // process the user may signal. A rank's pgid is 0 before its fork and after it is
  // reaped, so such values do arrive here in ordinary runs; this is the last layer
  // that stops them, and it stops them before any syscall.
  if (pgid <= 0) return false;
  // A rank always has a group of its own (setpgid in the child). A pgid equal to ours
  // would be a bookkeeping bug, and honouring it would kill berth with its ranks.
  if (pgid == getpgrp()) return false;
  bool sent = kill(-pgid, sig) == 0;
  // SIGKILL is how berth ends a group for good: the guard need not end it again, and
  // must not, since its id is free for reuse once the group is empty (spec 03 §9).
  if (sig == SIGKILL) guard::forget(pgid);
  if (sent) return true;
  // ESRCH: the group is gone, which is the outcome escalation wants. Anything else
  // (EPERM, EINVAL) also means nothing was signalled; the caller needs only that.
  return false;
}

}  // namespace berth::launch
