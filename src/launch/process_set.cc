// Commands started side by side (process_set.h).
#include "launch/process_set.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "launch/capture.h"
#include "launch/escalation.h"

namespace berth::launch {
namespace {

// Without a pidfd (kernels before 5.3) a command's end is looked for this often.
constexpr int kSweepMs = 50;

// What a command reaped by someone else reports: it is gone, how is unknown.
ExitStatus lost_status() {
  ExitStatus s;
  s.kind = ExitStatus::kSignaled;
  s.signal = SIGKILL;
  return s;
}

}  // namespace

ProcessSet::ProcessSet(Spawner& spawner, const Clock& clock) : spawner_(spawner), clock_(clock) {
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
  Supervised child;
  auto started = child.start(spawner_, req, ctx);
  if (!started.ok()) {
    return fail(started.error().code(), fmt::format("cannot start {}: {}", command_text(req.argv),
                                                    started.error().message()));
  }
  running_.push_back({std::move(child), tag});
  return Ok{};
}

void ProcessSet::wait_for_change(std::optional<std::chrono::steady_clock::time_point> until,
                                 bool signals) {
  std::vector<pollfd> fds;
  std::optional<std::chrono::steady_clock::time_point> wake = until;
  const auto now = clock_.steady();
  if (signals && sigfd_ >= 0) fds.push_back({sigfd_, POLLIN, 0});
  for (const Running& r : running_) {
    if (r.child.pidfd() >= 0) {
      fds.push_back({r.child.pidfd(), POLLIN, 0});
    } else {
      auto sweep = now + std::chrono::milliseconds(kSweepMs);
      if (!wake || sweep < *wake) wake = sweep;
    }
  }
  if (::poll(fds.data(), fds.size(), poll_timeout_ms(wake, now)) < 0 && errno != EINTR) {
    ::poll(nullptr, 0, kSweepMs);  // poll failed (ENOMEM): look again in a while
  }
}

std::optional<ProcessSet::Ended> ProcessSet::wait_one() {
  while (!running_.empty()) {
    if (auto e = reap_one()) return e;
    wait_for_change(std::nullopt, true);
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
    if (!it->child.try_reap(Supervised::Group::kKill)) continue;
    Ended e{it->tag, it->child.status().value_or(lost_status())};
    running_.erase(it);
    return e;
  }
  return std::nullopt;
}

void ProcessSet::end_all() {
  // The signals that are due go to every group still running; between steps, commands
  // that end are reaped as they end. Once SIGKILL has gone out, the rest cannot last.
  Escalation escalation(clock_);
  escalation.begin();
  while (!running_.empty()) {
    for (int sig : escalation.due()) {
      for (const Running& r : running_) r.child.signal(sig);
    }
    if (escalation.done()) break;
    while (reap_one()) {
    }
    if (running_.empty()) break;
    auto next = escalation.next_at();
    if (!next) next = clock_.steady();
    // Not the signalfd: berth is ending these already, and a second Ctrl-C left
    // unread would wake this wait at once, every time.
    wait_for_change(next, false);
  }
  for (Running& r : running_) r.child.reap(Supervised::Group::kKill);
  running_.clear();
}

}  // namespace berth::launch
