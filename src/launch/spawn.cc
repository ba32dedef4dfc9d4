// The spawn sequence (spawn.h, spec 03 §1), written down once.
//
// Mechanism: clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) running child_main() on a
// stack of its own, the way glibc's posix_spawn starts a child, but doing the steps
// posix_spawn cannot (close_range, CPU affinity, memory policy, rlimits). The child
// shares berth's memory until it execs, so starting it costs the same whatever berth's
// size: no page tables are copied and mmap_lock is not taken for writing, which is what
// makes fork() slow in a big or multi-threaded supervisor and serialises concurrent
// forks. `bench/launch/run.sh` measures it against a raw posix_spawn loop (the
// physical limit, which this spawner matches), vfork() with the same child (the same
// kernel path, but the child shares the caller's stack and frame) and fork() (about
// 0.8x, and 0.02x-0.05x with 1 GiB resident). So CLONE_VFORK it is, on a stack of its
// own so that the child runs a function rather than the rest of spawn() (vfork's
// returns-twice hazards). glibc's posix_spawn reports exec failures through shared
// memory rather than a pipe, which a CLONE_VM child could too; the pipe is kept because
// it is the contract (failure.h) and costs four syscalls, within the noise of a spawn.
//
// The sequence. Parent, in spawn():
//   1. refuse an empty argv; resolve argv[0] on the CHILD's PATH (search_path). A name
//      found nowhere is reported from here, with no child: execve of a bare name would
//      resolve it against the working directory, which is not what not-found means;
//   2. build the argv/envp pointer arrays and the CPU mask — everything that allocates,
//      into per-thread scratch that keeps its capacity between spawns;
//   3. open the error pipe, O_CLOEXEC;
//   4. block every signal (the child runs in berth's memory until exec, so none of
//      berth's handlers may run in it), clone, restore the mask;
//   5. on_pid(pid) — see "the gate" below;
//   6. read the error pipe: EOF with no record = exec succeeded; a record = the child
//      failed and has _exited: reap it, render the record (failure.h), return the Error.
// Child, in child_main() — raw syscall(2) only: no malloc, no locks, no stdio, no errno
// consumer but the record, and no libc wrapper a sanitizer intercepts:
//   a. setpgid(0, 0): its own process group;
//   b. stdin/stdout/stderr wired (-1 = /dev/null), sources and the error pipe first
//      moved above 2 so no dup2 overwrites a descriptor a later one reads;
//   c. every other descriptor closed: close_range around the error pipe;
//   d. every signal disposition to SIG_DFL (SIG_IGN included: exec keeps it, and a
//      child that inherits an ignored SIGPIPE or SIGTERM is a bug report) and the
//      mask emptied;
//   e. CPU affinity from the parent's mask; f. memory policy (a refused default is
//      silent); g. rlimits; h. chdir; i. execve.
//   Any failure: one SpawnFailure through the pipe, exit_group(127).
//
// The gate. spawn.h promises that no child can be reaped before its pid is recorded.
// With CLONE_VFORK the calling thread does not return from clone() until the child has
// exec'd or exited — so the child cannot wait at a gate for the parent (the parent is
// suspended), and needs not: a child that exits stays a zombie until waited for, and
// on_pid runs right after clone returns, before this thread waits on anything. That
// holds as long as nothing reaps with wait(-1)/waitpid(-1) on another thread while a
// spawn is in flight; berth's supervisor reaps on the thread that spawns, by pid or
// pidfd. A design with a reaper thread must peek with waitid(WNOWAIT) and take the
// spawner's lock before reaping. SpawnStage::kGate is therefore never reported here.
//
// setpgid is done in the child only: the parent's usual setpgid(pid, pid) closes a race
// that fork() has and CLONE_VFORK does not (the child's call is complete before the
// parent runs), and after exec it would fail with EACCES anyway.
//
// A relative argv[0] ("./a.out", "bin/x") is exec'd after the chdir, so it resolves in
// the child's working directory, as `cd DIR && ./a.out` would. Relative PATH entries
// are searched from berth's working directory.
#include "launch/spawn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <utility>

#include "launch/guard.h"
#include "util/idset.h"

namespace berth::launch {
namespace {

// The child function and what it calls must not be instrumented: it runs on a stack
// the sanitizers do not know, in berth's memory, and never returns (TSan's function
// exit hook would leave the parent thread's shadow stack one frame deeper per spawn;
// ASan's redzones, poisoned in the child's frames and never unpoisoned, would stay on
// the child's stack after it is unmapped, and whatever is mapped there next — SQLite's
// WAL index, in a process that runs many pipelines — would read as a stack overflow).
// clang 14 accepts disable_sanitizer_instrumentation yet still instruments for ASan,
// UBSan and coverage, so every kind is also named.
#if defined(__clang__) && __has_attribute(disable_sanitizer_instrumentation)
#define BERTH_CHILD_CODE                            \
  __attribute__((disable_sanitizer_instrumentation, \
                 no_sanitize("address", "thread", "undefined", "coverage"), noinline))
#elif defined(__clang__)
#define BERTH_CHILD_CODE \
  __attribute__((no_sanitize("address", "thread", "undefined", "coverage"), noinline))
#else
#define BERTH_CHILD_CODE __attribute__((no_sanitize("address", "thread", "undefined"), noinline))
#endif

// ThreadSanitizer intercepts clone() and runs its fork bookkeeping in the child, which
// with CLONE_VM corrupts the parent's state; its builds call glibc's clone directly.
#if defined(__SANITIZE_THREAD__)
#define BERTH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BERTH_TSAN 1
#endif
#endif

using CloneFn = int (*)(int (*)(void*), void*, int, void*, ...);

CloneFn libc_clone() {
#ifdef BERTH_TSAN
  static const CloneFn fn = [] {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void* sym = libc != nullptr ? dlsym(libc, "clone") : nullptr;
    return sym != nullptr ? reinterpret_cast<CloneFn>(sym) : &clone;
  }();
  return fn;
#else
  return &clone;
#endif
}

// The kernel's struct sigaction for rt_sigaction(2) on the 64-bit architectures berth
// builds for (glibc's own struct differs in layout and is not what the syscall takes).
struct KernelSigaction {
  void* handler;
  unsigned long flags;
  void* restorer;
  uint64_t mask;
};
constexpr long kSigsetBytes = sizeof(uint64_t);
constexpr int kMaxSignal = 64;

static_assert(sizeof(rlim_t) == 8, "prlimit64 takes struct rlimit as is on 64-bit Linux");
static_assert(sizeof(void*) == 8, "KernelSigaction is the 64-bit layout");

// Where PATH is unset in the child's environment, search as glibc's execvp does.
constexpr std::string_view kDefaultPath = "/bin:/usr/bin";
constexpr size_t kChildStackBytes = 64 * 1024;

// Everything the child reads. Built by the parent; the child only reads it (it lives in
// the parent's frame, which is suspended while the child runs).
struct ChildArgs {
  const char* path = nullptr;  // what execve gets
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;                // nullptr = keep berth's
  const unsigned long* cpu_mask = nullptr;  // nullptr = inherit berth's affinity
  size_t cpu_mask_bytes = 0;
  const std::pair<int, rlimit>* limits = nullptr;
  size_t n_limits = 0;
  bool has_mempolicy = false;
  bool mempolicy_default = false;
  int mempolicy = 0;
  int stdio[3] = {-1, -1, -1};
  int pass[kMaxPassFds] = {-1, -1, -1, -1};  // become 3, 4, … in the program
  int n_pass = 0;
  int errfd = -1;
  int guard_fd = -1;  // guard.h: the child names its group there; -1 = no guard
  // g'. Read-only paths (read_only.h): n_read_only of them, with their flags.
  const char* const* read_only = nullptr;
  const unsigned long* read_only_flags = nullptr;
  size_t n_read_only = 0;
  bool user_ns = false;
  const char* uid_map = nullptr;
  const char* gid_map = nullptr;
};

// ---- the child ------------------------------------------------------------------------

// Sends the record and ends the child. One write of 8 bytes: atomic on a pipe.
[[noreturn]] BERTH_CHILD_CODE void child_fail(int errfd, SpawnStage stage, int err) {
  SpawnFailure f;
  f.stage = stage;
  f.err = err;
  syscall(SYS_write, errfd, &f, sizeof f);
  for (;;) syscall(SYS_exit_group, 127);
}

// Moves `fd` to the lowest free descriptor >= `lo` (close-on-exec, so it never reaches
// the program). Returns the new fd or -1.
BERTH_CHILD_CODE int child_raise_fd(int fd, int lo = 3) {
  return static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, lo));
}

// Closes every descriptor from `lo` to `hi` inclusive; close_range where the kernel has
// it (5.9), else one close per possible descriptor up to the soft RLIMIT_NOFILE.
BERTH_CHILD_CODE void child_close_range(unsigned lo, unsigned hi) {
  if (lo > hi) return;
  if (syscall(SYS_close_range, lo, hi, 0) == 0) return;
  rlimit rl{};
  if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &rl) != 0) rl.rlim_cur = 1024;
  uint64_t top = rl.rlim_cur < hi ? rl.rlim_cur : static_cast<uint64_t>(hi) + 1;
  for (uint64_t fd = lo; fd < top; ++fd) syscall(SYS_close, fd);
}

// Writes `text` (NUL-terminated) to the file at `path`; 0 or errno.
BERTH_CHILD_CODE int child_write_file(const char* path, const char* text) {
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC));
  if (fd < 0) return errno;
  size_t n = 0;
  while (text[n] != '\0') ++n;
  long w = syscall(SYS_write, fd, text, n);
  int err = w < 0 ? errno : (static_cast<size_t>(w) == n ? 0 : EIO);
  syscall(SYS_close, fd);
  return err;
}

// g'. The read-only paths: a namespace of the child's own, each path bind-mounted onto
// itself (symlinks followed: the file it names) and remounted read-only there. 0 or
// errno.
BERTH_CHILD_CODE int child_read_only(const ChildArgs& a) {
  if (syscall(SYS_unshare, CLONE_NEWNS | (a.user_ns ? CLONE_NEWUSER : 0)) != 0) return errno;
  if (a.user_ns) {
    // Its own ids mapped to themselves; setgroups denied first, as the kernel requires
    // of an unprivileged gid_map.
    if (int e = child_write_file("/proc/self/setgroups", "deny")) return e;
    if (int e = child_write_file("/proc/self/uid_map", a.uid_map)) return e;
    if (int e = child_write_file("/proc/self/gid_map", a.gid_map)) return e;
  }
  // Nothing mounted here may reach berth's namespace (a shared / would carry it).
  if (syscall(SYS_mount, "none", "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return errno;
  for (size_t i = 0; i < a.n_read_only; ++i) {
    const char* path = a.read_only[i];
    if (syscall(SYS_mount, path, path, nullptr, MS_BIND, nullptr) != 0) return errno;
    unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | a.read_only_flags[i];
    if (syscall(SYS_mount, "none", path, nullptr, flags, nullptr) != 0) return errno;
  }
  return 0;
}

BERTH_CHILD_CODE int child_main(void* p) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(p);
  int errfd = a.errfd;

  // a. Its own process group, so that berth signals the rank and all it starts.
  if (syscall(SYS_setpgid, 0, 0) != 0) child_fail(errfd, SpawnStage::kSetsid, errno);
  // a'. The guard learns of the group before anything runs in it (spec 03 §9): from
  // here on, berth's death ends it, even if berth dies before clone returns. The
  // descriptor is close-on-exec and closed with the rest below.
  if (a.guard_fd >= 0) {
    guard::Record rec{guard::kWatch, static_cast<int32_t>(syscall(SYS_getpid))};
    while (syscall(SYS_sendto, a.guard_fd, &rec, sizeof rec, MSG_NOSIGNAL, nullptr, 0) < 0 &&
           errno == EINTR) {
    }
  }

  // b. stdio and passed descriptors. The error pipe and every passed descriptor are
  // first copied above the slots they could collide with (0-2 and 3..3+n_pass-1):
  // only a berth started with 0-2 closed can have the pipe down there.
  const int first_free = 3 + a.n_pass;
  if (errfd < first_free) {
    int moved = child_raise_fd(errfd, first_free);
    if (moved < 0) child_fail(errfd, SpawnStage::kStdio, errno);
    errfd = moved;
  }
  int pass[kMaxPassFds];
  for (int i = 0; i < a.n_pass; ++i) {
    pass[i] = child_raise_fd(a.pass[i], first_free);
    if (pass[i] < 0) child_fail(errfd, SpawnStage::kStdio, errno);
  }
  int src[3] = {a.stdio[0], a.stdio[1], a.stdio[2]};
  if (src[0] < 0 || src[1] < 0 || src[2] < 0) {
    int null_fd =
        static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY));
    if (null_fd < 0) child_fail(errfd, SpawnStage::kStdio, errno);
    for (int& s : src) {
      if (s < 0) s = null_fd;
    }
  }
  // A source in 0-2 that is not already in place would be overwritten by an earlier
  // dup2 (stdout_fd = 2, stderr_fd = 1): move every such source above 2 first.
  for (int i = 0; i < 3; ++i) {
    if (src[i] < 3 && src[i] != i) {
      int moved = child_raise_fd(src[i]);
      if (moved < 0) child_fail(errfd, SpawnStage::kStdio, errno);
      for (int j = i + 1; j < 3; ++j) {
        if (src[j] == src[i]) src[j] = moved;
      }
      src[i] = moved;
    }
  }
  for (int i = 0; i < 3; ++i) {
    // dup3 clears close-on-exec on the copy; a source already in place keeps its own
    // flag, which must be cleared or exec would close it.
    long rc = src[i] == i ? syscall(SYS_fcntl, i, F_SETFD, 0) : syscall(SYS_dup3, src[i], i, 0);
    if (rc < 0) child_fail(errfd, SpawnStage::kStdio, errno);
  }
  for (int i = 0; i < a.n_pass; ++i) {
    if (syscall(SYS_dup3, pass[i], 3 + i, 0) < 0) child_fail(errfd, SpawnStage::kStdio, errno);
  }

  // c. Nothing else of berth's reaches the program. The error pipe stays (it is
  // close-on-exec, and is how exec's success is seen).
  child_close_range(static_cast<unsigned>(first_free), static_cast<unsigned>(errfd) - 1);
  child_close_range(static_cast<unsigned>(errfd) + 1, ~0U);

  // d. Signals: default dispositions before the mask opens, so no handler of berth's
  // can run here, then the empty mask (the parent blocked everything around clone).
  KernelSigaction dfl{};  // SIG_DFL is handler 0
  for (int sig = 1; sig <= kMaxSignal; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    if (syscall(SYS_rt_sigaction, sig, &dfl, nullptr, kSigsetBytes) != 0) {
      child_fail(errfd, SpawnStage::kSignals, errno);
    }
  }
  uint64_t empty = 0;
  if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty, nullptr, kSigsetBytes) != 0) {
    child_fail(errfd, SpawnStage::kSignals, errno);
  }

  // e. CPU affinity, from the mask the parent computed.
  if (a.cpu_mask != nullptr &&
      syscall(SYS_sched_setaffinity, 0, a.cpu_mask_bytes, a.cpu_mask) != 0) {
    child_fail(errfd, SpawnStage::kAffinity, errno);
  }

  // f. Memory policy. A default berth chose is best effort: containers' seccomp
  // profiles deny set_mempolicy with EPERM, and that must not stop the launch (spec 03 §1, step f).
  if (a.has_mempolicy && syscall(SYS_set_mempolicy, a.mempolicy, nullptr, 0UL) != 0 &&
      !a.mempolicy_default) {
    child_fail(errfd, SpawnStage::kMemPolicy, errno);
  }

  // g. Resource limits.
  for (size_t i = 0; i < a.n_limits; ++i) {
    if (syscall(SYS_prlimit64, 0, a.limits[i].first, &a.limits[i].second, nullptr) != 0) {
      child_fail(errfd, SpawnStage::kLimits, errno);
    }
  }

  // g'. Read-only paths.
  if (a.n_read_only > 0) {
    if (int e = child_read_only(a)) child_fail(errfd, SpawnStage::kReadOnly, e);
  }

  // h. Working directory, then i. exec.
  if (a.cwd != nullptr && syscall(SYS_chdir, a.cwd) != 0) {
    child_fail(errfd, SpawnStage::kChdir, errno);
  }
  syscall(SYS_execve, a.path, a.argv, a.envp);
  child_fail(errfd, SpawnStage::kExec, errno);
}

// ---- the parent -----------------------------------------------------------------------

// Per-thread state kept between spawns, so that a spawn allocates nothing in the
// common case. Safe to reuse: CLONE_VFORK suspends this thread until the child no
// longer uses any of it, and nothing here is touched after on_pid runs.
class Scratch {
 public:
  ~Scratch() {
    if (stack_ != nullptr) munmap(stack_, kChildStackBytes + page_);
  }
  // The top of the child's stack (it grows down), with a guard page below; nullptr
  // with errno set when it cannot be mapped.
  void* stack_top() {
    if (stack_ == nullptr) {
      page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      void* m = mmap(nullptr, kChildStackBytes + page_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (m == MAP_FAILED) return nullptr;
      mprotect(m, page_, PROT_NONE);
      stack_ = m;
    }
    return static_cast<char*>(stack_) + page_ + kChildStackBytes;
  }
  std::vector<char*> ptrs;         // argv, nullptr, envp, nullptr
  std::vector<const char*> read_only;  // the read-only paths (g')
  std::vector<unsigned long> cpu;  // the affinity mask, in the kernel's layout

 private:
  void* stack_ = nullptr;
  size_t page_ = 0;
};

thread_local Scratch t_scratch;

// Whether clone() takes CLONE_PIDFD here (kernel 5.2); cleared on the first EINVAL.
std::atomic<bool> g_clone_pidfd{true};

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::string prefix(const FailureContext& c) {
  if (c.rank < 0) return "";  // a command berth runs for itself: its caller names it
  return "rank " + std::to_string(c.rank) + " on " + c.node + ": ";
}

// The child's PATH, from its environment.
std::string_view child_path(const std::vector<std::string>& envp) {
  for (const std::string& e : envp) {
    if (e.size() >= 5 && e.compare(0, 5, "PATH=") == 0) {
      return std::string_view(e).substr(5);
    }
  }
  return kDefaultPath;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) {
    if (!s.empty()) s += ',';
    s += std::to_string(c);
  }
  return s;
}

// What kind of Error a child's record is, for the CLI's exit status.
Errc errc_for(const SpawnFailure& f) {
  switch (f.stage) {
    case SpawnStage::kAffinity:
    case SpawnStage::kMemPolicy:
      return Errc::kRefused;
    case SpawnStage::kChdir:
    case SpawnStage::kExec:
      return f.err == ENOENT || f.err == ENOTDIR ? Errc::kNotFound : Errc::kIo;
    default:
      return Errc::kIo;
  }
}

// The rendered Error for a record. Fills in what the caller's context may lack and
// spawn knows (the resolved path, the cwd, the cpus asked for).
Error failure_error(const SpawnFailure& f, const SpawnRequest& req, const FailureContext& ctx,
                    const std::string& resolved, std::string_view path_env) {
  FailureContext c = ctx;
  if (c.executable.empty()) c.executable = req.argv[0];
  // The path exec'd: what the renderer stats ("is a directory", "bad interpreter").
  if (c.resolved.empty()) c.resolved = resolved;
  if (c.cwd.empty()) c.cwd = req.cwd;
  if (c.cpus.empty()) c.cpus = cpu_list(req.cpus);
  return Error(errc_for(f), render_failure(f, c, std::string(path_env)));
}

// The child's arguments from `req`, pointing into this thread's scratch `s` (argv and
// envp already there, envp from `envp_at`). Fails, naming the request, for a CPU id or a
// descriptor list the child could not take.
Result<void> child_args(const SpawnRequest& req, const FailureContext& ctx, Scratch& s,
                        size_t envp_at, const char* exec_path, std::string_view path_env,
                        ChildArgs& args) {
  args.path = exec_path;
  args.argv = s.ptrs.data();
  args.envp = s.ptrs.data() + envp_at;
  args.cwd = req.cwd.empty() ? nullptr : req.cwd.c_str();
  if (!req.cpus.empty()) {
    constexpr int kBits = 8 * sizeof(unsigned long);
    int max_cpu = 0;
    for (int c : req.cpus) {
      if (c < 0) {
        return fail(Errc::kInvalidInput,
                    prefix(ctx) + "CPU id " + std::to_string(c) + " is negative");
      }
      if (c > max_cpu) max_cpu = c;
    }
    if (max_cpu > idset::kMaxCpuId) {
      return failure_error({SpawnStage::kAffinity, EINVAL}, req, ctx, exec_path, path_env);
    }
    s.cpu.assign(static_cast<size_t>(max_cpu / kBits + 1), 0);
    for (int c : req.cpus) s.cpu[static_cast<size_t>(c / kBits)] |= 1UL << (c % kBits);
    args.cpu_mask = s.cpu.data();
    args.cpu_mask_bytes = s.cpu.size() * sizeof(unsigned long);
  }
  args.limits = req.limits.data();
  args.n_limits = req.limits.size();
  args.has_mempolicy = req.mempolicy.has_value();
  args.mempolicy = req.mempolicy.value_or(0);
  args.mempolicy_default = req.mempolicy_default;
  args.stdio[0] = req.stdin_fd;
  args.stdio[1] = req.stdout_fd;
  args.stdio[2] = req.stderr_fd;
  if (req.pass_fds.size() > kMaxPassFds) {
    return fail(Errc::kInvalidInput,
                prefix(ctx) + "more than " + std::to_string(kMaxPassFds) + " descriptors to pass");
  }
  for (int fd : req.pass_fds) args.pass[args.n_pass++] = fd;
  if (req.read_only != nullptr && !req.read_only->empty()) {
    const ReadOnlyPaths& ro = *req.read_only;
    if (ro.keep_flags.size() != ro.paths.size()) {
      return fail(Errc::kInvalidInput, prefix(ctx) + "read-only paths without their flags");
    }
    s.read_only.clear();
    for (const std::string& path : ro.paths) s.read_only.push_back(path.c_str());
    args.read_only = s.read_only.data();
    args.read_only_flags = ro.keep_flags.data();
    args.n_read_only = ro.paths.size();
    args.user_ns = ro.user_ns;
    args.uid_map = ro.uid_map.c_str();
    args.gid_map = ro.gid_map.c_str();
  }

  return Ok{};
}

class RealSpawner final : public Spawner {
 public:
  Result<Spawned> spawn(const SpawnRequest& req, const FailureContext& ctx,
                        const std::function<void(pid_t)>& on_pid) override;
};

Result<Spawned> RealSpawner::spawn(const SpawnRequest& req, const FailureContext& ctx,
                                   const std::function<void(pid_t)>& on_pid) {
  // 1. The executable, on the child's PATH.
  if (req.argv.empty() || req.argv[0].empty()) {
    return fail(Errc::kInvalidInput, prefix(ctx) + "no command to run");
  }
  std::string_view path_env = child_path(req.envp);
  std::string searched;  // only a bare name is searched, and only then allocates
  const char* exec_path = req.argv[0].c_str();
  if (req.argv[0].find('/') == std::string::npos) {
    searched = search_path(req.argv[0], std::string(path_env));
    if (searched.empty()) {
      return failure_error({SpawnStage::kExec, ENOENT}, req, ctx, searched, path_env);
    }
    // A hit in a relative PATH entry was found from berth's working directory; the
    // child execs after its chdir, so it gets the absolute path.
    if (searched[0] != '/' && !req.cwd.empty()) {
      char here[PATH_MAX];
      if (getcwd(here, sizeof here) != nullptr) searched = std::string(here) + "/" + searched;
    }
    exec_path = searched.c_str();
  }

  // 2. argv, envp and the CPU mask, into this thread's scratch.
  Scratch& s = t_scratch;
  s.ptrs.clear();
  for (const std::string& arg : req.argv) s.ptrs.push_back(const_cast<char*>(arg.c_str()));
  s.ptrs.push_back(nullptr);
  size_t envp_at = s.ptrs.size();
  for (const std::string& e : req.envp) s.ptrs.push_back(const_cast<char*>(e.c_str()));
  s.ptrs.push_back(nullptr);

  ChildArgs args;
  BERTH_CHECK(child_args(req, ctx, s, envp_at, exec_path, path_env, args));

  void* stack = s.stack_top();
  if (stack == nullptr) {
    return fail(Errc::kIo, prefix(ctx) + "cannot start '" + req.argv[0] +
                               "': mapping the child's stack: " + errno_text(errno));
  }

  // 3. The error pipe.
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    return fail(Errc::kIo, prefix(ctx) + "cannot start '" + req.argv[0] +
                               "': error pipe: " + errno_text(errno));
  }
  args.errfd = pipefd[1];
  args.guard_fd = guard::fd();

  // 4. Clone with every signal blocked (raw, as glibc's posix_spawn does, so that its
  // internal signals are blocked too); the child inherits the mask and resets it.
  uint64_t all = ~0ULL;
  uint64_t old_mask = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old_mask, kSigsetBytes);
  int pidfd = -1;
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  bool with_pidfd = g_clone_pidfd.load(std::memory_order_relaxed);
  CloneFn do_clone = libc_clone();
  pid_t pid = do_clone(child_main, stack, flags | (with_pidfd ? CLONE_PIDFD : 0), &args, &pidfd);
  if (pid < 0 && with_pidfd && errno == EINVAL) {
    g_clone_pidfd.store(false, std::memory_order_relaxed);
    with_pidfd = false;
    pidfd = -1;
    pid = do_clone(child_main, stack, flags, &args);
  }
  int clone_errno = errno;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old_mask, nullptr, kSigsetBytes);
  close(pipefd[1]);
  if (pid < 0) {
    close(pipefd[0]);
    return fail(Errc::kIo, prefix(ctx) + "cannot start '" + req.argv[0] +
                               "': clone: " + errno_text(clone_errno));
  }
  if (!with_pidfd) pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // -1: none

  // 5. Record the pid before anything on this thread can reap it (see "the gate").
  if (on_pid) on_pid(pid);

  // 6. The verdict. The child has exec'd or exited by now; the read sees EOF as soon as
  // no exec'ing child of another thread still holds a copy of the write end.
  SpawnFailure rec;
  ssize_t n;
  do {
    n = read(pipefd[0], &rec, sizeof rec);
  } while (n < 0 && errno == EINTR);
  int read_errno = errno;
  close(pipefd[0]);
  if (n == 0) return Spawned{pid, pidfd};

  // The child failed (or the pipe did): it has exited or is about to; reap it.
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  guard::forget(pid);
  if (pidfd >= 0) close(pidfd);
  if (n == static_cast<ssize_t>(sizeof rec)) {
    return failure_error(rec, req, ctx, exec_path, path_env);
  }
  return fail(Errc::kInternal, prefix(ctx) + "starting '" + req.argv[0] +
                                   "': the error pipe returned " + std::to_string(n) + " bytes" +
                                   (n < 0 ? ": " + errno_text(read_errno) : ""));
}

}  // namespace

Spawner& Spawner::real() {
  static RealSpawner spawner;
  return spawner;
}

std::string search_path(const std::string& name, const std::string& path) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return name;
  std::string candidate;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    // An empty entry is the current directory, as for execvp.
    if (end == start) {
      candidate = name;
    } else {
      candidate.assign(path, start, end - start);
      candidate += '/';
      candidate += name;
    }
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        faccessat(AT_FDCWD, candidate.c_str(), X_OK, AT_EACCESS) == 0) {
      return end == start ? "./" + name : candidate;
    }
    start = end + 1;
  }
  return {};
}

std::vector<std::string> envp_of(const Env& env) {
  std::vector<std::string> out;
  out.reserve(env.vars().size());
  for (const auto& [name, value] : env.vars()) out.push_back(name + "=" + value);
  return out;
}

}  // namespace berth::launch
