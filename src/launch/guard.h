// The guard: whatever ends berth — SIGKILL included — ends every process group it
// started (spec 03 §9).
//
// A small process, forked from berth the first time berth starts a child, holds one end
// of a socket pair; berth holds the other. Every child tells the guard its group id from
// inside the spawn sequence, before it execs (spawn.cc, child step a'), and berth tells
// it when a group has been ended for good (signal_group with SIGKILL). When berth ends,
// however it ends, the kernel closes its end of the socket: the guard reads end-of-file,
// sends SIGCONT and SIGTERM to every group still on its list, SIGKILL to those left
// after kGuardGrace, and exits. No signal handler of berth's has to run for this.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>

namespace berth::launch::guard {

// How long the guard waits between SIGTERM and SIGKILL once berth is gone. Short: the
// promise is that nothing of berth's outlives it by more than a second.
inline constexpr std::chrono::milliseconds kGuardGrace{300};

// The descriptor a child writes its group to (one Record, send(MSG_NOSIGNAL)); starts
// the guard on the first call. -1 when it could not be started: berth goes on without
// it, and says why once, as a warning (util/say.h): "cannot start the process guard
// (fork: ...): processes berth starts may outlive a berth that is killed".
int fd();

// One message to the guard. Sent whole (SOCK_SEQPACKET), so concurrent senders do not
// interleave.
struct Record {
  int32_t op;    // kWatch or kForget
  int32_t pgid;  // > 0
};
inline constexpr int32_t kWatch = 1;
inline constexpr int32_t kForget = 2;

// Tells the guard that group `pgid` has been ended (every member sent SIGKILL), so it
// need not be ended again — and must not be: its id may be reused once it is empty.
void forget(pid_t pgid);

// The pid of the guard process, or -1 when it is not running (for tests).
pid_t pid();

}  // namespace berth::launch::guard
