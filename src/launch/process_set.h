// ProcessSet: commands started side by side and waited for as each ends (spec 03 §6),
// for a caller that starts whole commands rather than the ranks of a job — `berth place
// --run` runs each granted launch so. Each is a Supervised child (supervised.h): started
// by the spawner in a process group of its own, and reaped by its pid when its pidfd
// says it ended — never by waitpid(-1), which would take any child of berth's. When one
// ends its group is sent SIGKILL, so nothing it left running outlives it.
//
// A command's own group does not get the terminal's Ctrl-C: berth does. So while a set
// exists, berth's SIGINT, SIGTERM and SIGHUP arrive through a signalfd and end every
// command by escalation (SIGCONT, SIGTERM, SIGKILL after the grace, timed on the set's
// Clock); signalled() says
// by what, for the caller to exit 128 + S. Without a signalfd the signals keep their
// default action: berth dies of them rather than never hearing of them. One thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "launch/spawn.h"
#include "launch/status.h"
#include "launch/supervised.h"
#include "util/clock.h"
#include "util/result.h"

namespace berth::launch {

class ProcessSet {
 public:
  struct Ended {
    uint64_t tag = 0;  // as given to start()
    // How it ended; a command reaped by someone else (a waitpid(-1) elsewhere in the
    // process) reads as killed by SIGKILL, its real status being unknown.
    ExitStatus status;
  };

  // Commands are started by `spawner` and ended on `clock`'s time; both must outlive
  // the set.
  explicit ProcessSet(Spawner& spawner = Spawner::real(), const Clock& clock = Clock::real());
  // Ends, by escalation, whatever still runs, and gives the signals back.
  ~ProcessSet();
  ProcessSet(const ProcessSet&) = delete;
  ProcessSet& operator=(const ProcessSet&) = delete;

  // Starts `req` in a group of its own, known as `tag`. Fails, naming the command,
  // when it cannot be started.
  Result<void> start(const SpawnRequest& req, uint64_t tag);

  bool empty() const { return running_.empty(); }
  // The signal that ended the commands, 0 when none did.
  int signalled() const { return signal_; }

  // Waits until a command ends and returns it; nullopt when berth was signalled, after
  // every command has been ended (signalled() says by what), or when none is running.
  std::optional<Ended> wait_one();

  // Ends every running command by escalation and reaps it.
  void end_all();

 private:
  struct Running {
    Supervised child;
    uint64_t tag;
  };

  // Takes the first command that has ended off the list, its group killed first.
  std::optional<Ended> reap_one();
  // Waits until a command ends, `until` comes (nullopt: no limit) or, with `signals`,
  // berth is signalled.
  void wait_for_change(std::optional<std::chrono::steady_clock::time_point> until, bool signals);

  Spawner& spawner_;
  const Clock& clock_;
  std::vector<Running> running_;
  sigset_t mask_{};
  sigset_t old_mask_{};
  int sigfd_ = -1;
  int signal_ = 0;
};

}  // namespace berth::launch
