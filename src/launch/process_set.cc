// Commands started side by side (process_set.h).
#include "launch/process_set.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "launch/capture.h"
#include "launch/escalation.h"

namespace berth::launch {

ProcessSet::ProcessSet() {
  sigemptyset(&mask_);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask_, sig);
  pthread_sigmask(SIG_BLOCK, &mask_, &old_mask_);
  sigfd_ = ::signalfd(-1, &mask_, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd_ < 0) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

ProcessSet::~ProcessSet() {
  end_all();
  if (sigfd_ >= 0) {
    ::close(sigfd_);
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
}

Result<void> ProcessSet::start(const SpawnRequest& req, uint64_t tag) {
  FailureContext ctx;
  ctx.rank = -1;  // not a rank of a job: the message names the command
  auto spawned = Spawner::real().spawn(req, ctx, nullptr);
  if (!spawned.ok()) {
    return fail(spawned.error().code(), fmt::format("cannot start {}: {}", command_text(req.argv),
                                                    spawned.error().message()));
  }
  running_.push_back({spawned->pid, spawned->pidfd, tag});
  return Ok{};
}

std::optional<ProcessSet::Ended> ProcessSet::wait_one() {
  while (!running_.empty()) {
    if (auto e = reap_one()) return e;
    std::vector<pollfd> fds;
    bool sweep = false;  // a command without a pidfd (kernel < 5.3) is looked at often
    if (sigfd_ >= 0) fds.push_back({sigfd_, POLLIN, 0});
    for (const Running& r : running_) {
      if (r.pidfd >= 0) {
        fds.push_back({r.pidfd, POLLIN, 0});
      } else {
        sweep = true;
      }
    }
    if (::poll(fds.data(), fds.size(), sweep ? 50 : -1) < 0 && errno != EINTR) {
      ::poll(nullptr, 0, 50);  // poll failed (ENOMEM): look again in a while
    }
    signalfd_siginfo si{};
    if (sigfd_ >= 0 && ::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      signal_ = static_cast<int>(si.ssi_signo);
      end_all();
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<ProcessSet::Ended> ProcessSet::reap_one() {
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(it->pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid != it->pid) {
      continue;
    }
    signal_group(it->pid, SIGKILL);
    int status = 0;
    while (::waitpid(it->pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (it->pidfd >= 0) ::close(it->pidfd);
    Ended e{it->tag, decode_wait_status(status)};
    running_.erase(it);
    return e;
  }
  return std::nullopt;
}

void ProcessSet::end_all() {
  for (const EscalationStep& step : escalation_table()) {
    auto until = std::chrono::steady_clock::now() + step.after;
    while (!running_.empty() && std::chrono::steady_clock::now() < until) {
      if (reap_one()) continue;
      ::poll(nullptr, 0, 10);
    }
    for (const Running& r : running_) signal_group(r.pid, step.signal);
  }
  for (const Running& r : running_) {
    int status = 0;
    while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (r.pidfd >= 0) ::close(r.pidfd);
  }
  running_.clear();
}

}  // namespace berth::launch
