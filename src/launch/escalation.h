// Escalation: how berth ends a rank's process group, as a table (spec 03 §6).
//
// SIGCONT first (a stopped process cannot act on SIGTERM), then SIGTERM, then after
// the grace period SIGKILL. The table is data so that it is tested, printed and
// changed in one place. Escalation walks the table over time, on a Clock, for every
// supervisor of berth's (job.h, capture.h, process_set.h).
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "util/clock.h"

namespace berth::launch {

struct EscalationStep {
  int signal;                       // sent to the rank's process group
  std::chrono::milliseconds after;  // delay after the previous step
};

inline constexpr std::chrono::milliseconds kDefaultGrace{300};

// {SIGCONT, 0}, {SIGTERM, 0}, {SIGKILL, grace}.
std::vector<EscalationStep> escalation_table(std::chrono::milliseconds grace = kDefaultGrace);

// The table walked over time: which signals are due, and when the next one is. Sends
// nothing itself; its owner sends what due() returns to the groups it is ending, and
// wakes at next_at() for the rest. The time is `clock`'s, so that a test can move it.
class Escalation {
 public:
  explicit Escalation(const Clock& clock = Clock::real()) : clock_(&clock) {}

  // Starts the walk now, with `grace` before SIGKILL. A second call does nothing: an
  // escalation under way is never restarted (that would postpone its SIGKILL).
  void begin(std::chrono::milliseconds grace = kDefaultGrace);
  bool begun() const { return begun_; }
  // Every step has been returned by due().
  bool done() const { return begun_ && next_ >= steps_.size(); }

  // The signals whose time has come, in the table's order, each returned once; empty
  // before begin().
  std::vector<int> due();
  // When the next step falls due; nullopt before begin() and once done.
  std::optional<std::chrono::steady_clock::time_point> next_at() const;

 private:
  const Clock* clock_;
  std::vector<EscalationStep> steps_;
  size_t next_ = 0;
  std::chrono::steady_clock::time_point next_at_{};
  bool begun_ = false;
};

// Sends `sig` to the process group `pgid`, refusing (returning false without any
// syscall) when pgid <= 0 or pgid is berth's own process group: kill(0) and kill(-0)
// are "every process in berth's group", kill(-1) is every process berth may signal.
// Returns false also when the group no longer exists (ESRCH).
bool signal_group(int pgid, int sig);

}  // namespace berth::launch
