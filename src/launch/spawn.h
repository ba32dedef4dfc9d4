// The spawn sequence: one child process, started exactly one way (spec 03 §1).
//
// This is the only place berth creates a process for work. The sequence, in order:
//   parent: resolve argv[0] on the CHILD's PATH (not berth's), build argv/envp arrays
//           and the CPU mask, open the close-on-exec error pipe — everything that
//           allocates happens here, before the child exists;
//   child:  (async-signal-safe only: no malloc, no locks, no stdio)
//           wait at the fork gate until the parent has recorded the pid (so no child
//           can be reaped unattributed); own process group; stdin/stdout/stderr
//           wired; pass_fds placed at 3, 4, …; every other descriptor closed
//           (close_range); signal dispositions
//           and mask reset; CPU affinity from the parent's mask; memory policy where
//           asked (a refused default policy is silent); resource limits; read-only
//           paths in a mount namespace of its own, where asked; working directory;
//           execve.
//   any failure: one SpawnFailure record through the pipe, then _exit(127). EOF on
//           the pipe with no record means exec succeeded.
// The parent renders a failure into a message naming the rank, the executable or
// directory, and the node (failure.h).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/failure.h"
#include "launch/read_only.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::launch {

inline constexpr size_t kMaxPassFds = 4;

struct SpawnRequest {
  std::vector<std::string> argv;    // argv[0] as given; searched on envp's PATH if no '/'
  std::vector<std::string> envp;    // "NAME=VALUE", the child's whole environment
  std::string cwd;                  // "" = berth's own
  std::vector<int> cpus;            // CPU ids to bind to; empty = inherit berth's
  int stdin_fd = -1;                // parent's fds to become 0, 1, 2; -1 = /dev/null
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Parent descriptors the child inherits as 3, 4, … in order (a PMI wire-up socket,
  // say); at most kMaxPassFds. Every other descriptor of berth's is closed.
  std::vector<int> pass_fds;
  std::vector<std::pair<int, rlimit>> limits;  // RLIMIT_* to set in the child
  // set_mempolicy(mode) in the child when given. `mempolicy_default` marks a policy
  // berth chose by default rather than one the user asked for: if the kernel refuses
  // it (EPERM under a container's seccomp) the child goes on silently.
  std::optional<int> mempolicy;
  bool mempolicy_default = false;
  // Paths the program may not write through (read_only.h): made read-only in a mount
  // namespace of the child's own. nullptr or empty: none, and no namespace.
  const ReadOnlyPaths* read_only = nullptr;
};

struct Spawned {
  pid_t pid = -1;     // > 0; also the child's process-group id
  int pidfd = -1;     // a pidfd for the child where the kernel has pidfd_open, else -1
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  // Starts the child. `on_pid` runs in the parent after the child exists and before
  // it passes the fork gate: record the pid there. Fails with the rendered message
  // (render_failure) when the child could not exec; the child is already reaped then.
  virtual Result<Spawned> spawn(const SpawnRequest& req, const FailureContext& ctx,
                                const std::function<void(pid_t)>& on_pid) = 0;

  // The real spawner (spawn.cc).
  static Spawner& real();
};

// Resolves `name` as execvp would, but on `path` (the child's PATH): a name with a
// '/' is returned as is; else the first directory in which `name` exists and is an
// executable regular file. Empty when there is none.
std::string search_path(const std::string& name, const std::string& path);

// `env` as SpawnRequest::envp: "NAME=VALUE" for each variable, in name order.
std::vector<std::string> envp_of(const Env& env);

}  // namespace berth::launch
