// Supervised: one child in a process group of its own, from its start to its reaping
// (spec 03 §1, §6) — the core that jobs (job.h), captures (capture.h) and commands
// started side by side (process_set.h) are built on, each with its own I/O around it.
//
// The child is started by the one spawner (spawn.h), so it leads a group of its own
// and the guard knows the group. Its end is seen through its pidfd where the kernel
// has one (poll it; pidfd() is -1 otherwise, and the owner looks every few tens of
// milliseconds). It is reaped by its pid, never by waitpid(-1), which would take any
// child of berth's. Reaping peeks first (waitid with WNOWAIT) and reaps after, so that
// the group can be sent SIGKILL while the exited leader is still a zombie: its pid,
// the group's id, cannot have been reused by then, and nothing the child left running
// outlives it. Its exit status is decoded by status.h.
//
// Ending a child is the owner's: Escalation (escalation.h) says which signal is due
// when, and signal() sends it to the group. Not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>

#include "launch/failure.h"
#include "launch/spawn.h"
#include "launch/status.h"
#include "util/result.h"

namespace berth::launch {

class Supervised {
 public:
  // What reaping does to the group of a child that has ended.
  enum class Group {
    kKill,   // SIGKILL, before the leader is reaped (its leftovers go with it)
    kLeave,  // nothing: the owner ends the group later itself (a job, when it ends)
  };

  Supervised() = default;
  // Closes the pidfd. Neither ends nor reaps a child still running: that is the owner's.
  ~Supervised();
  Supervised(Supervised&& other) noexcept;
  Supervised& operator=(Supervised&& other) noexcept;
  Supervised(const Supervised&) = delete;
  Supervised& operator=(const Supervised&) = delete;

  // Starts `req` through `spawner`; `on_pid` as Spawner::spawn's (it runs before the
  // child can be reaped). Fails as the spawner does, the child already reaped then.
  Result<void> start(Spawner& spawner, const SpawnRequest& req, const FailureContext& ctx,
                     const std::function<void(pid_t)>& on_pid = {});

  // The child's pid, which is its group's id; -1 before it started.
  pid_t pid() const { return pid_; }
  // Readable when the child ends; -1 where the kernel has no pidfds, and once reaped.
  int pidfd() const { return pidfd_; }
  bool started() const { return pid_ > 0; }
  // Started and not yet reaped.
  bool running() const { return pid_ > 0 && !reaped_; }

  // Looks once, without blocking: when the child has ended, `group` is done to its
  // group and the child is reaped. Returns true once the child is reaped — or lost:
  // reaped by someone else (a waitpid(-1) elsewhere in the process), its status
  // unknown. False while it runs, and before it started.
  bool try_reap(Group group = Group::kKill);
  // Waits until the child ends and reaps it as try_reap does. For a child that has
  // been sent SIGKILL: it does not wait long.
  void reap(Group group = Group::kKill);

  // How the child ended, once reaped; nullopt while it runs, and when it was lost.
  const std::optional<ExitStatus>& status() const { return status_; }
  bool lost() const { return reaped_ && !status_; }

  // Sends `sig` to the child's group (signal_group's refusals apply). Refused, false,
  // before the start and after the reaping unless `sig` is SIGKILL, which also reaches
  // a group whose leader is gone but whose other members live on.
  bool signal(int sig) const;

 private:
  void close_pidfd();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  bool reaped_ = false;
  std::optional<ExitStatus> status_;
};

// poll(2)'s timeout in milliseconds for waking at `wake` when it is `now`: -1 (no
// limit) without a wake, else at least 0 and one millisecond past the wake (poll
// rounds down), at most a minute.
int poll_timeout_ms(std::optional<std::chrono::steady_clock::time_point> wake,
                    std::chrono::steady_clock::time_point now);

}  // namespace berth::launch
