// capture(): one child, its stdin fed and its output read in one poll loop (capture.h).
//
// The loop waits on at most four descriptors — the child's stdin (writable), its stdout
// and stderr (readable), and its pidfd (readable when it exits) — and on two deadlines:
// the timeout, and while ending the group the next escalation step. It ends when the
// child is reaped and both output pipes are at EOF, or a short drain after the child's
// exit when something outside the group still holds them.
#include "launch/capture.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "launch/supervised.h"
#include "util/clock.h"
#include "util/strings.h"

namespace berth::launch {
namespace {

using TimePoint = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

// Without a pidfd (kernels before 5.3) the child's exit is looked for this often.
constexpr milliseconds kSweep{20};
// After the child is reaped and its group killed, how long output pipes still held by a
// process that left the group (setsid) are read before they are given up.
constexpr milliseconds kDrain{200};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Both ends of a pipe, closed when the call returns however it returns.
struct Pipe {
  int r = -1;
  int w = -1;
  ~Pipe() {
    close_fd(r);
    close_fd(w);
  }
  bool open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    r = fds[0];
    w = fds[1];
    return true;
  }
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// write(2) to a pipe whose reader may have gone, without the process-wide SIGPIPE: the
// signal is blocked in this thread for the call, and one the write raised is consumed
// (unless one was already pending, which belongs to someone else).
ssize_t write_no_sigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
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

std::string seconds_text(milliseconds d) {
  if (d.count() % 1000 == 0) return fmt::format("{} s", d.count() / 1000);
  return fmt::format("{:.3g} s", static_cast<double>(d.count()) / 1000.0);
}

// One running capture: the child, its pipes, and how it is being ended.
class Run {
 public:
  Run(const CaptureRequest& req, std::string what)
      : req_(req),
        what_(std::move(what)),
        clock_(req.clock != nullptr ? *req.clock : Clock::real()),
        escalation_(clock_) {}

  Result<Captured> start_and_wait(Spawner& spawner);

 private:
  enum class Why { kNone, kTimeout, kTooMuch, kPollFailed };

  void write_input();
  void read_output(int& fd, bool is_err);
  void reap();
  void begin_ending(Why why);
  void escalate();
  int poll_timeout_ms() const;

  const CaptureRequest& req_;
  const std::string what_;
  const Clock& clock_;
  Pipe in_, out_, err_;
  Supervised child_;
  int poll_errno_ = 0;
  size_t written_ = 0;
  Captured got_;
  Why why_ = Why::kNone;
  std::optional<TimePoint> deadline_;
  std::optional<TimePoint> drain_until_;
  Escalation escalation_;
};

void Run::write_input() {
  while (written_ < req_.input.size()) {
    ssize_t n = write_no_sigpipe(in_.w, req_.input.data() + written_, req_.input.size() - written_);
    if (n > 0) {
      written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;  // the pipe is full: poll says when it drains
    // EPIPE: the child stopped reading (head -n 1, or it exited): its business, not an
    // error. Anything else ends the writing the same way.
    break;
  }
  close_fd(in_.w);  // all written: the child sees EOF
}

void Run::read_output(int& fd, bool is_err) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close_fd(fd);  // EOF (or a read error, which ends this stream the same way)
      return;
    }
    if (is_err) {
      got_.err.append(buf, static_cast<size_t>(n));
      // Keep the tail: the end of stderr is where a failing command says why.
      if (got_.err.size() > 2 * req_.stderr_tail) {
        got_.err.erase(0, got_.err.size() - req_.stderr_tail);
      }
      continue;
    }
    got_.out.append(buf, static_cast<size_t>(n));
    if (got_.out.size() > req_.max_output) {
      got_.out.resize(req_.max_output);
      begin_ending(Why::kTooMuch);
      return;
    }
  }
}

void Run::reap() {
  if (!child_.running()) return;
  // Whatever the child left running in its group goes with it (spec 03 §6).
  if (!child_.try_reap(Supervised::Group::kKill)) return;
  if (!child_.lost()) drain_until_ = clock_.steady() + std::max(req_.grace, kDrain);
}

void Run::begin_ending(Why why) {
  if (why_ != Why::kNone) return;
  why_ = why;
  // Nothing more is wanted from the child: its stdin and output are closed, so a child
  // blocked on either sees EPIPE (or EOF) and ends sooner.
  close_fd(in_.w);
  close_fd(out_.r);
  close_fd(err_.r);
  escalation_.begin(req_.grace);
  escalate();
}

void Run::escalate() {
  // Every step that is due; poll's timeout wakes the loop for the next one. A reaped
  // child's group was already sent SIGKILL.
  for (int sig : escalation_.due()) {
    if (child_.running()) child_.signal(sig);
  }
}

int Run::poll_timeout_ms() const {
  auto now = clock_.steady();
  std::optional<TimePoint> wake;
  auto consider = [&](TimePoint t) {
    if (!wake || t < *wake) wake = t;
  };
  if (deadline_ && why_ == Why::kNone) consider(*deadline_);
  if (auto next = escalation_.next_at(); why_ != Why::kNone && next) consider(*next);
  if (drain_until_) consider(*drain_until_);
  if (child_.running() && child_.pidfd() < 0) consider(now + kSweep);
  return launch::poll_timeout_ms(wake, now);
}

Result<Captured> Run::start_and_wait(Spawner& spawner) {
  // 1. Pipes: stdin only when there is input, stderr apart only when not merged.
  bool feed = !req_.input.empty();
  if (!out_.open() || (!req_.merge_stderr && !err_.open()) || (feed && !in_.open())) {
    return fail(Errc::kIo, fmt::format("cannot run {}: pipe: {}", what_, std::strerror(errno)));
  }

  // 2. The child, through the one spawner.
  SpawnRequest sr;
  sr.argv = req_.argv;
  sr.envp = req_.envp;
  sr.cwd = req_.cwd;
  sr.stdin_fd = feed ? in_.r : -1;
  sr.stdout_fd = out_.w;
  sr.stderr_fd = req_.merge_stderr ? out_.w : err_.w;
  FailureContext ctx;
  ctx.rank = -1;  // no rank: the message names the command instead
  ctx.executable = req_.argv[0];
  auto spawned = child_.start(spawner, sr, ctx);
  // The child holds its own copies now; ours would keep its output pipes from EOF.
  close_fd(in_.r);
  close_fd(out_.w);
  close_fd(err_.w);
  if (!spawned.ok()) {
    const Error& e = spawned.error();
    return fail(e.code(), fmt::format("cannot run {}: {}", what_, e.message()));
  }
  for (int fd : {in_.w, out_.r, err_.r}) {
    if (fd >= 0) set_nonblocking(fd);
  }
  if (req_.timeout) deadline_ = clock_.steady() + *req_.timeout;

  // 3. Until the child is reaped and its output read to the end.
  for (;;) {
    if (!child_.running() && out_.r < 0 && err_.r < 0) break;
    if (drain_until_ && clock_.steady() >= *drain_until_) break;
    pollfd fds[4];
    nfds_t n = 0;
    int in_at = -1, out_at = -1, err_at = -1;
    if (in_.w >= 0) {
      in_at = static_cast<int>(n);
      fds[n++] = {in_.w, POLLOUT, 0};
    }
    if (out_.r >= 0) {
      out_at = static_cast<int>(n);
      fds[n++] = {out_.r, POLLIN, 0};
    }
    if (err_.r >= 0) {
      err_at = static_cast<int>(n);
      fds[n++] = {err_.r, POLLIN, 0};
    }
    if (child_.running() && child_.pidfd() >= 0) fds[n++] = {child_.pidfd(), POLLIN, 0};
    int ready = ::poll(fds, n, poll_timeout_ms());
    if (ready < 0 && errno != EINTR && why_ == Why::kNone) {
      // poll itself failed (ENOMEM): end the child rather than spin or hang.
      poll_errno_ = errno;
      begin_ending(Why::kPollFailed);
    }
    if (ready > 0) {
      if (in_at >= 0 && fds[in_at].revents != 0) write_input();
      if (out_at >= 0 && fds[out_at].revents != 0) read_output(out_.r, false);
      if (err_at >= 0 && fds[err_at].revents != 0 && err_.r >= 0) read_output(err_.r, true);
    }
    reap();
    if (deadline_ && why_ == Why::kNone && child_.running() && clock_.steady() >= *deadline_) {
      begin_ending(Why::kTimeout);
    }
    escalate();
  }
  // Output still held open past the drain by something that left the group is given
  // up; the child itself is always reaped before the loop ends.
  close_fd(in_.w);
  close_fd(out_.r);
  close_fd(err_.r);

  // 4. The verdict.
  switch (why_) {
    case Why::kTimeout:
      return fail(Errc::kIo, fmt::format("{} did not finish within {}", what_,
                                         seconds_text(req_.timeout.value_or(milliseconds(0)))));
    case Why::kTooMuch:
      return fail(Errc::kRefused,
                  fmt::format("{} printed more than {} bytes", what_, req_.max_output));
    case Why::kPollFailed:
      return fail(Errc::kIo,
                  fmt::format("waiting for {}: poll: {}", what_, std::strerror(poll_errno_)));
    case Why::kNone:
      break;
  }
  if (child_.lost()) {
    return fail(Errc::kIo, fmt::format("{} was reaped by another part of berth: its exit status "
                                       "is unknown",
                                       what_));
  }
  got_.status = *child_.status();
  if (got_.err.size() > req_.stderr_tail) got_.err.erase(0, got_.err.size() - req_.stderr_tail);
  return std::move(got_);
}

}  // namespace

std::string command_text(const std::vector<std::string>& argv) {
  return "'" + str::printable(str::join(argv, " "), 200) + "'";
}

Result<Captured> capture(const CaptureRequest& req, Spawner& spawner) {
  if (req.argv.empty() || req.argv[0].empty()) {
    return fail(Errc::kInvalidInput, "capture: no command to run");
  }
  Run run(req, command_text(req.argv));
  return run.start_and_wait(spawner);
}

}  // namespace berth::launch
