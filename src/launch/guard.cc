// The guard process (guard.h, spec 03 §9).
//
// Why a process and not the kernel's parent-death signal: PR_SET_PDEATHSIG fires when
// the *thread* that created the child ends, not the process, and reaches only the
// direct child — a step's `sh -c` — never what it started in turn. A group id, by
// contrast, names the child and everything it starts that does not leave the group.
// Why end-of-file on a socket: the kernel closes every descriptor of a process that
// ends, however it ends; nothing of berth's needs to run.
//
// The guard is forked, not exec'd: it runs only raw system calls on memory it owns
// (a static bitmap of group ids), so forking from a threaded berth is safe. It leaves
// berth's process group and ignores the terminal's signals, so a Ctrl-C or a kill of
// berth's group reaches berth, whose death the guard then acts on.
#include "launch/guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "util/say.h"

namespace berth::launch::guard {
namespace {

#if defined(__clang__) && __has_attribute(disable_sanitizer_instrumentation)
#define BERTH_GUARD_CODE __attribute__((disable_sanitizer_instrumentation, noinline))
#else
#define BERTH_GUARD_CODE __attribute__((no_sanitize("address", "thread", "undefined"), noinline))
#endif

// Linux's largest pid_max (2^22): one bit per possible group id, 512 KiB of address
// space of which the guard touches only the pages its groups fall in.
constexpr uint32_t kMaxPid = 1u << 22;
uint64_t g_live[kMaxPid / 64];

std::atomic<int> g_fd{-1};
std::atomic<pid_t> g_pid{-1};
std::once_flag g_once;

BERTH_GUARD_CODE bool live(uint32_t pg) { return (g_live[pg / 64] >> (pg % 64)) & 1u; }

// The guard's whole life. Raw syscalls only.
[[noreturn]] BERTH_GUARD_CODE void guard_main(int fd) {
  // Out of berth's group and deaf to the terminal: only berth's death moves it.
  syscall(SYS_setpgid, 0, 0);
  struct {
    void* handler;
    unsigned long flags;
    void* restorer;
    uint64_t mask;
  } ignore{reinterpret_cast<void*>(SIG_IGN), 0, nullptr, 0};
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1,
                  SIGUSR2}) {
    syscall(SYS_rt_sigaction, sig, &ignore, nullptr, sizeof(uint64_t));
  }
  uint64_t empty = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty, nullptr, sizeof empty);
  syscall(SYS_chdir, "/");
  // Every descriptor but its own end: holding berth's end (or any pipe of a rank's)
  // would keep the end-of-file it waits for from ever coming.
  int keep = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0));
  if (keep < 0) keep = fd;
  if (keep > 0) syscall(SYS_close_range, 0u, static_cast<unsigned>(keep - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u);

  for (;;) {
    Record r{};
    long n = syscall(SYS_recvfrom, keep, &r, sizeof r, 0, nullptr, nullptr);
    if (n == static_cast<long>(sizeof r)) {
      if (r.pgid <= 0 || static_cast<uint32_t>(r.pgid) >= kMaxPid) continue;
      auto pg = static_cast<uint32_t>(r.pgid);
      if (r.op == kWatch) g_live[pg / 64] |= uint64_t{1} << (pg % 64);
      if (r.op == kForget) g_live[pg / 64] &= ~(uint64_t{1} << (pg % 64));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // end-of-file: berth is gone (or the socket broke, which means the same)
  }

  // SIGCONT first (a stopped group keeps SIGTERM pending), SIGTERM, then SIGKILL for
  // what is left after the grace — spec 03 §6's escalation, on a fixed short clock.
  bool any = false;
  for (uint32_t w = 0; w < kMaxPid / 64; ++w) {
    if (g_live[w] == 0) continue;
    for (uint32_t b = 0; b < 64; ++b) {
      uint32_t pg = w * 64 + b;
      if (!live(pg)) continue;
      any = true;
      syscall(SYS_kill, -static_cast<long>(pg), SIGCONT);
      syscall(SYS_kill, -static_cast<long>(pg), SIGTERM);
    }
  }
  if (any) {
    constexpr long kStepNs = 20'000'000;
    for (long waited = 0; waited < kGuardGrace.count() * 1'000'000; waited += kStepNs) {
      bool left = false;
      for (uint32_t w = 0; w < kMaxPid / 64; ++w) {
        if (g_live[w] == 0) continue;
        for (uint32_t b = 0; b < 64; ++b) {
          uint32_t pg = w * 64 + b;
          if (!live(pg)) continue;
          if (syscall(SYS_kill, -static_cast<long>(pg), 0) != 0) {
            g_live[w] &= ~(uint64_t{1} << b);  // the group is gone
          } else {
            left = true;
          }
        }
      }
      if (!left) break;
      struct timespec ts{0, kStepNs};
      syscall(SYS_nanosleep, &ts, nullptr);
    }
    for (uint32_t w = 0; w < kMaxPid / 64; ++w) {
      if (g_live[w] == 0) continue;
      for (uint32_t b = 0; b < 64; ++b) {
        if ((g_live[w] >> b) & 1u) syscall(SYS_kill, -static_cast<long>(w * 64 + b), SIGKILL);
      }
    }
  }
  for (;;) syscall(SYS_exit_group, 0);
}

// Says why the guard could not be started.
void tell(const char* call, int err) {
  say(SayLevel::kWarning, std::string("cannot start the process guard (") + call + ": " +
                              std::strerror(err) +
                              "): processes berth starts may outlive a berth that is killed");
}

void start() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    tell("socketpair", errno);
    return;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sv[0]);
    guard_main(sv[1]);
  }
  ::close(sv[1]);
  if (pid < 0) {
    tell("fork", errno);
    ::close(sv[0]);
    return;
  }
  g_pid.store(pid, std::memory_order_release);
  g_fd.store(sv[0], std::memory_order_release);
}

}  // namespace

int fd() {
  std::call_once(g_once, start);
  return g_fd.load(std::memory_order_acquire);
}

void forget(pid_t pgid) {
  int fd = g_fd.load(std::memory_order_acquire);
  if (pgid <= 0 || fd < 0) return;
  Record r{kForget, static_cast<int32_t>(pgid)};
  // A guard that is gone (killed by hand) cannot be told; berth goes on without it.
  while (::send(fd, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

pid_t pid() { return g_pid.load(std::memory_order_acquire); }

}  // namespace berth::launch::guard
