// A user's canonicaliser: argv with the output's bytes on stdin, its stdout back.
#include "pipeline/canonicaliser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <pthread.h>

#include <fmt/format.h>

#include "util/strings.h"

extern char** environ;

namespace berth::pipeline {
namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// write(2) to a pipe whose reader may have gone, without the process-wide SIGPIPE: the
// signal is blocked in this thread for the call, and one it raised is consumed.
ssize_t write_no_sigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = ::write(fd, data, n);
  int err = errno;
  if (w < 0 && err == EPIPE && !was_pending) {
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return w;
}

}  // namespace

Result<std::string> run_canonicaliser(const std::vector<std::string>& argv, std::string_view bytes,
                                      const std::string& cwd) {
  if (argv.empty()) return fail(Errc::kInvalidInput, "canonicaliser: no command");
  std::string what = fmt::format("canonicaliser '{}'", str::join(argv, " "));
  Pipe in, out, err;
  if (::pipe2(in.fd, O_CLOEXEC) != 0 || ::pipe2(out.fd, O_CLOEXEC) != 0 ||
      ::pipe2(err.fd, O_CLOEXEC) != 0) {
    return fail(Errc::kIo, fmt::format("{}: pipe: {}", what, std::strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return fail(rc == ENOENT ? Errc::kNotFound : Errc::kRefused,
                fmt::format("{}: cannot start: {}", what, std::strerror(rc)));
  }
  in.close_end(0);
  out.close_end(1);
  err.close_end(1);
  ::fcntl(in.fd[1], F_SETFL, O_NONBLOCK);

  std::string stdout_bytes, stderr_bytes;
  size_t written = 0;
  bool too_much = false;
  if (bytes.empty()) in.close_end(1);
  char buf[65536];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    pollfd fds[3] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}, {in.fd[1], POLLOUT, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
      ssize_t n = write_no_sigpipe(in.fd[1], bytes.data() + written, bytes.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      // A canonicaliser may stop reading early (head -n 1): that is its business.
      if (written == bytes.size() || (n < 0 && errno != EAGAIN && errno != EINTR)) in.close_end(1);
    }
    for (int k = 0; k < 2; ++k) {
      Pipe& p = k == 0 ? out : err;
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(p.fd[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        p.close_end(0);
        continue;
      }
      std::string& dst = k == 0 ? stdout_bytes : stderr_bytes;
      dst.append(buf, static_cast<size_t>(n));
      if (k == 1 && stderr_bytes.size() > 8192) stderr_bytes.erase(0, stderr_bytes.size() - 4096);
      if (k == 0 && stdout_bytes.size() > kMaxCanonicalBytes) {
        too_much = true;
        ::kill(pid, SIGKILL);
        out.close_end(0);
        err.close_end(0);
      }
    }
  }
  in.close_end(1);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (too_much) {
    return fail(Errc::kRefused, fmt::format("{}: printed more than {} bytes", what,
                                            kMaxCanonicalBytes));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return stdout_bytes;
  std::string tail(str::trim(stderr_bytes));
  if (tail.size() > 400) tail = "…" + tail.substr(tail.size() - 400);
  std::string how = WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                        : fmt::format("exited with status {}", WEXITSTATUS(status));
  return fail(Errc::kRefused, fmt::format("{} {}{}{}", what, how, tail.empty() ? "" : ": ", tail));
}

}  // namespace berth::pipeline
