// ProcessSet: commands started side by side and waited for as each ends (spec 03 §6),
// for a caller that starts whole commands rather than the ranks of a job — `berth place
// --run` runs each granted launch so. Each is started by the spawner in a process group
// of its own, and reaped by its pid when its pidfd says it ended — never by waitpid(-1),
// which would take any child of berth's — with its exit decoded by status.h. When one
// ends its group is sent SIGKILL, so nothing it left running outlives it.
//
// A command's own group does not get the terminal's Ctrl-C: berth does. So while a set
// exists, berth's SIGINT, SIGTERM and SIGHUP arrive through a signalfd and end every
// command by escalation (SIGCONT, SIGTERM, SIGKILL after the grace); signalled() says
// by what, for the caller to exit 128 + S. Without a signalfd the signals keep their
// default action: berth dies of them rather than never hearing of them. One thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "launch/spawn.h"
#include "launch/status.h"
#include "util/result.h"

namespace berth::launch {

class ProcessSet {
 public:
  struct Ended {
    uint64_t tag = 0;  // as given to start()
    ExitStatus status;
  };

  ProcessSet();
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
    pid_t pid;
    int pidfd;
    uint64_t tag;
  };

  // Takes the first command that has ended off the list, its group killed first (while
  // its pid, the group's id, is still held by the zombie and cannot be reused).
  std::optional<Ended> reap_one();

  std::vector<Running> running_;
  sigset_t mask_{};
  sigset_t old_mask_{};
  int sigfd_ = -1;
  int signal_ = 0;
};

}  // namespace berth::launch
