#include "launch/status.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

namespace berth::launch {
namespace {

// Signal numbers differ between architectures (SIGBUS is 7 on x86 and 10 on MIPS;
// SIGUSR1 is 10 or 16), so the table is keyed by the macros, never by position.
// A fixed table rather than strsignal(): strsignal's text depends on the locale and
// is a description ("Terminated"), not the name a user types into `kill -s`;
// sigabbrev_np() would do but is glibc-only (2.32+) and leaves out the "SIG".
struct SignalName {
  int number;
  const char* name;
};
constexpr SignalName kSignalNames[] = {
    {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
    {SIGILL, "SIGILL"},       {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
    {SIGBUS, "SIGBUS"},       {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
    {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
#ifdef SIGSTKFLT
    {SIGSTKFLT, "SIGSTKFLT"},
#endif
    {SIGCHLD, "SIGCHLD"},     {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
    {SIGTSTP, "SIGTSTP"},     {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
    {SIGURG, "SIGURG"},       {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
    {SIGIO, "SIGIO"},
#ifdef SIGPWR
    {SIGPWR, "SIGPWR"},
#endif
    {SIGSYS, "SIGSYS"},
};

}  // namespace

ExitStatus decode_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.kind = ExitStatus::kExited;
    s.code = WEXITSTATUS(status);  // as is: 3 stays 3 (spec 03 §5)
  } else if (WIFSIGNALED(status)) {
    s.kind = ExitStatus::kSignaled;
    s.signal = WTERMSIG(status);
    s.core_dumped = WCOREDUMP(status);
  } else if (WIFSTOPPED(status)) {
    // Unreachable with WEXITED (status.h), but a status that slipped through must
    // never read as success: report it as the signal that stopped the process.
    s.kind = ExitStatus::kSignaled;
    s.signal = WSTOPSIG(status);
  } else {
    s.kind = ExitStatus::kSignaled;  // WIFCONTINUED: likewise, never a success
    s.signal = SIGCONT;
  }
  return s;
}

std::string describe(const ExitStatus& s) {
  if (s.kind == ExitStatus::kExited) return fmt::format("exited with status {}", s.code);
  return fmt::format("killed by signal {} ({}){}", s.signal, signal_name(s.signal),
                     s.core_dumped ? " (core dumped)" : "");
}

std::string signal_name(int sig) {
  for (const SignalName& n : kSignalNames) {
    if (n.number == sig) return n.name;
  }
  // Real-time signals have no names of their own; SIGRTMIN is a function call in
  // glibc (it reserves the first few for threads), so this cannot be in the table.
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    return sig == SIGRTMIN ? "SIGRTMIN" : fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  }
  return fmt::format("signal {}", sig);
}

}  // namespace berth::launch
