// One child in a group of its own, from its start to its reaping (supervised.h).
#include "launch/supervised.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "launch/escalation.h"

namespace berth::launch {

Supervised::~Supervised() { close_pidfd(); }

Supervised::Supervised(Supervised&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      reaped_(std::exchange(other.reaped_, false)),
      status_(std::exchange(other.status_, std::nullopt)) {}

Supervised& Supervised::operator=(Supervised&& other) noexcept {
  if (this != &other) {
    close_pidfd();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    reaped_ = std::exchange(other.reaped_, false);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

void Supervised::close_pidfd() {
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
}

Result<void> Supervised::start(Spawner& spawner, const SpawnRequest& req, const FailureContext& ctx,
                               const std::function<void(pid_t)>& on_pid) {
  auto spawned = spawner.spawn(req, ctx, [&](pid_t pid) {
    // Recorded before the child passes the fork gate: it can never end unattributed.
    pid_ = pid;
    if (on_pid) on_pid(pid);
  });
  if (!spawned.ok()) {
    pid_ = -1;  // the spawner reaped the child that could not exec
    return spawned.error();
  }
  pid_ = spawned->pid;
  pidfd_ = spawned->pidfd;
  return Ok{};
}

bool Supervised::try_reap(Group group) {
  if (pid_ <= 0) return false;
  if (reaped_) return true;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return false;
    // ECHILD: someone else reaped it. Nothing is left to wait for; the status is unknown.
    reaped_ = true;
    close_pidfd();
    return true;
  }
  if (info.si_pid != pid_) return false;  // still running
  // The leader is a zombie now, so its pid (the group's id) is still held.
  if (group == Group::kKill) signal_group(pid_, SIGKILL);
  int wstatus = 0;
  pid_t got;
  while ((got = ::waitpid(pid_, &wstatus, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  close_pidfd();
  if (got == pid_) status_ = decode_wait_status(wstatus);
  return true;
}

void Supervised::reap(Group group) {
  if (pid_ <= 0 || reaped_) return;
  siginfo_t info{};
  // Block until it has ended (without reaping), then reap it as try_reap does.
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 &&
         errno == EINTR) {
  }
  try_reap(group);
}

bool Supervised::signal(int sig) const {
  if (pid_ <= 0 || (reaped_ && sig != SIGKILL)) return false;
  return signal_group(pid_, sig);
}

int poll_timeout_ms(std::optional<std::chrono::steady_clock::time_point> wake,
                    std::chrono::steady_clock::time_point now) {
  if (!wake) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*wake - now).count() + 1;
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

}  // namespace berth::launch
