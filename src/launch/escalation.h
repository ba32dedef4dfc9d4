// Escalation: how berth ends a rank's process group, as a table (spec 03 §6).
//
// SIGCONT first (a stopped process cannot act on SIGTERM), then SIGTERM, then after
// the grace period SIGKILL. The table is data so that it is tested, printed and
// changed in one place.
#pragma once

#include <chrono>
#include <vector>

namespace berth::launch {

struct EscalationStep {
  int signal;                       // sent to the rank's process group
  std::chrono::milliseconds after;  // delay after the previous step
};

inline constexpr std::chrono::milliseconds kDefaultGrace{300};

// {SIGCONT, 0}, {SIGTERM, 0}, {SIGKILL, grace}.
std::vector<EscalationStep> escalation_table(std::chrono::milliseconds grace = kDefaultGrace);

// Sends `sig` to the process group `pgid`, refusing (returning false without any
// syscall) when pgid <= 0 or pgid is berth's own process group: kill(0) and kill(-0)
// are "every process in berth's group", kill(-1) is every process berth may signal.
// Returns false also when the group no longer exists (ESRCH).
bool signal_group(int pgid, int sig);

}  // namespace berth::launch
