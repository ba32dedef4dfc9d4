// Capture: run a short command to its end and keep what it printed (spec 03 §8).
//
// For the commands berth runs for itself rather than as work: a launcher's `--version`,
// a pipeline tool's version command, a user's canonicaliser. The child is started by
// the one spawner (spawn.h: its own process group, every other descriptor closed,
// signals reset, the environment it is given and no other), fed `input` on its stdin,
// and read until it ends. Writing its stdin and reading its stdout and stderr happen in
// one poll loop, so a child that prints a lot before it reads cannot deadlock against
// berth; one that exits without reading all of its stdin is not an error (EPIPE ends
// the writing, and SIGPIPE never reaches berth).
//
// Bounded twice. In time: past `timeout` the child's process group gets escalation.h's
// table (SIGCONT, SIGTERM, SIGKILL after `grace`) and the call fails naming the command
// and the limit. In size: past `max_output` bytes the group is ended the same way and
// the call fails naming the limit. When the command ends, its process group is sent
// SIGKILL, so nothing it started outlives the call (a leftover background process would
// otherwise also hold the output pipe open). The child is reaped by pid, never by
// waitpid(-1), and its status decoded by status.h: it is a Supervised child
// (supervised.h), as every child berth supervises is.
//
// A command that runs and exits non-zero (or is killed by a signal of its own) is not a
// failure of capture(): the status comes back, and the caller decides what it means.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/escalation.h"
#include "launch/spawn.h"
#include "launch/status.h"
#include "util/clock.h"
#include "util/result.h"

namespace berth::launch {

struct CaptureRequest {
  std::vector<std::string> argv;  // argv[0] searched on envp's PATH when it has no '/'
  std::vector<std::string> envp;  // "NAME=VALUE": the child's whole environment
  std::string cwd;                // "" = berth's own
  // Written to the child's stdin, which is then closed; empty = /dev/null. Not copied:
  // it must outlive the call.
  std::string_view input;
  // stderr into `Captured::out`, interleaved as the child wrote it (one pipe for both),
  // instead of apart in `Captured::err`.
  bool merge_stderr = false;
  // The most bytes of stdout (with stderr when merged) kept; one more is an error.
  size_t max_output = size_t{1} << 20;
  // stderr apart is for messages: only its last `stderr_tail` bytes are kept, and more
  // is never an error.
  size_t stderr_tail = 4096;
  // nullopt: no limit (a canonicaliser takes as long as its input needs).
  std::optional<std::chrono::milliseconds> timeout = std::chrono::seconds(10);
  std::chrono::milliseconds grace = kDefaultGrace;
  // Whose time the timeout, the escalation and the drain are measured on; nullptr =
  // the real clock. Must outlive the call.
  const Clock* clock = nullptr;
};

struct Captured {
  ExitStatus status;
  std::string out;  // stdout (and stderr, when merged), whole
  std::string err;  // the tail of stderr; empty when merged
};

// Runs `req` to its end. Fails with
//   the spawner's error (kNotFound for a program found nowhere on the child's PATH or a
//   missing working directory, else kIo or kRefused), prefixed "cannot run 'CMD'";
//   kInvalidInput for an empty argv;
//   kIo "'CMD' did not finish within N s" past the timeout;
//   kRefused "'CMD' printed more than N bytes" past max_output;
//   kIo when a pipe cannot be made, poll fails, or the child was reaped by someone else.
// Whenever a child was started, it has been reaped and its process group sent SIGKILL
// by the time this returns, success or not.
Result<Captured> capture(const CaptureRequest& req, Spawner& spawner = Spawner::real());

// The command as messages name it: 'srun --version' (quoted, one printable line).
std::string command_text(const std::vector<std::string>& argv);

}  // namespace berth::launch
