// How a process ended, decoded from a wait status in exactly one place (spec 03 §5).
#pragma once

#include <string>

namespace berth::launch {

struct ExitStatus {
  enum Kind { kExited, kSignaled } kind = kExited;
  int code = 0;    // kExited: the exit code as is (3 stays 3)
  int signal = 0;  // kSignaled: the signal number
  bool core_dumped = false;

  // The shell's convention: the code, or 128 + signal (SIGTERM -> 143, SIGKILL -> 137).
  int exit_code() const { return kind == kExited ? code : 128 + signal; }
  bool ok() const { return kind == kExited && code == 0; }
};

// Decodes a waitpid() status. A status that is neither exited nor signaled (stopped,
// continued) never reaches here: the reaper waits with WEXITED only.
ExitStatus decode_wait_status(int status);

// "exited with status 3", "killed by signal 15 (SIGTERM)", "... (core dumped)".
std::string describe(const ExitStatus& s);

// "SIGTERM" for 15, "signal 99" for an unknown number.
std::string signal_name(int sig);

}  // namespace berth::launch
