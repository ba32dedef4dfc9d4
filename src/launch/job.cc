// The supervisor of one job: spawn, forward, reap, escalate (spec 03).
#include "launch/job.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>

#include "launch/supervised.h"
#include "topo/topology_xml.h"
#include "util/clock.h"
#include "util/strings.h"

namespace berth::launch {
namespace {

using TimePoint = std::chrono::steady_clock::time_point;

// Descriptors a rank costs berth at most: stdout and stderr pipes, a stdin pipe, and
// slack for the error pipe during the spawn.
constexpr int kFdsPerRank = 4;
constexpr int kFdsReserved = 32;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// One stream of one rank: a pipe's read end and the partial line not yet forwarded.
struct Stream {
  int fd = -1;
  std::string pending;
  bool is_stderr = false;
};

struct Rank {
  RankOutcome outcome;
  std::vector<int> cpus;
  Stream out, err;
  int stdin_w = -1;     // --stdin all: berth writes what it reads into this
  Supervised child;     // the rank's process, in its group of its own
  bool reaped = false;  // reaped, or never to be started: nothing to wait for
  std::string argv0;
  bool mpi_init = false;   // the rank connected to a wire-up server (MPI_Init)
  bool mpi_final = false;  // and finalized (MPI_Finalize)
};

// Events from the wire-up servers' threads, queued for the supervisor's loop, which
// wakes on the eventfd.
struct WireEvents {
  std::mutex mu;
  std::vector<wireup::RankEvent> queue;
  int fd = -1;
  ~WireEvents() {
    if (fd >= 0) ::close(fd);
  }
};

// Checks that the job's descriptors fit under RLIMIT_NOFILE, raising the soft limit
// toward the hard one when needed; retried briefly, since other descriptors of the
// process may be closing. Fails naming the limit.
Result<void> check_fd_limit(int ranks) {
  uint64_t need = static_cast<uint64_t>(ranks) * kFdsPerRank + kFdsReserved;
  for (int attempt = 0; attempt < 3; ++attempt) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return Ok{};
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return Ok{};
    if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
      rl.rlim_cur = need;
      if (setrlimit(RLIMIT_NOFILE, &rl) == 0) return Ok{};
    }
    struct timespec pause = {0, 100'000'000};
    nanosleep(&pause, nullptr);
  }
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  return fail(Errc::kRefused,
              fmt::format("{} ranks need about {} file descriptors, but RLIMIT_NOFILE is {} "
                          "(hard {}); raise it (ulimit -n) or launch fewer ranks",
                          ranks, need, rl.rlim_cur, rl.rlim_max));
}

// The same for RLIMIT_NPROC: a job larger than the process limit cannot start.
Result<void> check_proc_limit(int ranks) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NPROC, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return Ok{};
  if (static_cast<uint64_t>(ranks) < rl.rlim_cur) return Ok{};
  return fail(Errc::kRefused,
              fmt::format("{} ranks exceed RLIMIT_NPROC ({}); raise it (ulimit -u) or launch "
                          "fewer ranks",
                          ranks, rl.rlim_cur));
}

class Supervisor {
 public:
  Supervisor(const JobSpec& spec, const Env& parent, Spawner& spawner, const OutputSinks& sinks)
      : spec_(spec),
        parent_(parent),
        spawner_(spawner),
        sinks_(sinks),
        clock_(spec.clock != nullptr ? *spec.clock : Clock::real()),
        escalation_(clock_) {}

  Result<JobOutcome> run();

 private:
  Result<void> prepare();
  void start_ranks();
  Result<void> start_one(Rank& r, size_t index);
  void loop();
  void handle_signals();
  Result<void> start_wireup();
  void handle_wire_events();
  void reap();
  void drain(Stream& s, const Rank& r, bool eof_flush);
  void emit(const Rank& r, bool is_stderr, std::string_view line);
  void forward_stdin();
  void record_failure(int code, std::string message);
  void begin_abort(int code, std::string message);
  // A rank failed with `message`: recorded (--keep-going) or the job aborted, unless
  // it is aborting already.
  void rank_failed(int code, std::string message);
  void escalate();
  bool all_done() const;
  void kill_all_groups(int sig);

  const JobSpec& spec_;
  const Env& parent_;
  Spawner& spawner_;
  const OutputSinks& sinks_;
  const Clock& clock_;

  std::vector<Rank> ranks_;
  std::vector<Env> envs_;        // per rank
  int sigfd_ = -1;
  sigset_t old_mask_{};
  bool aborting_ = false;
  Escalation escalation_;
  std::optional<TimePoint> deadline_;
  std::optional<TimePoint> drain_until_;
  int exit_code_ = 0;
  bool timed_out_ = false;
  std::vector<std::string> messages_;
  bool stdin_open_ = false;
  std::shared_ptr<WireEvents> wire_events_;
  std::unique_ptr<wireup::JobWire> wire_;  // destroyed first: off the servers
};

Result<void> Supervisor::start_wireup() {
  if (spec_.mpi == wireup::Mode::kNone) return Ok{};
  wireup::Wireup& w = spec_.wireup != nullptr
                          ? *spec_.wireup
                          : wireup::Wireup::process(parent_.get("TMPDIR").value_or("/tmp"));
  std::vector<int> sizes;
  for (const AppSpec& app : spec_.apps) sizes.push_back(app.ranks);
  wireup::JobMap map = wireup::JobMap::local(w.next_id(), spec_.node, sizes);
  map.oversubscribed =
      !spec_.usable_cores.empty() && static_cast<size_t>(map.size()) > spec_.usable_cores.size();
  if (map.size() > 1) {
    // A job of one rank under auto is not served (wireup.h): no topology for it.
    auto xml = topo::topology_xml();
    if (xml.ok()) map.topology_xml = std::move(*xml);
  }
  wire_events_ = std::make_shared<WireEvents>();
  wire_events_->fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wire_events_->fd < 0)
    return fail(Errc::kIo, fmt::format("eventfd: {}", std::strerror(errno)));
  // The sink runs on a server's thread: queue and wake, nothing else.
  auto served = w.serve(map, spec_.mpi, [ev = wire_events_](const wireup::RankEvent& e) {
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      ev->queue.push_back(e);
    }
    uint64_t one = 1;
    (void)!::write(ev->fd, &one, sizeof one);
  });
  if (!served.ok()) return served.error();
  wire_ = std::move(*served);
  for (const auto& n : wire_->notices()) {
    if (sinks_.err) sinks_.err(fmt::format("berth: {}\n", n));
  }
  return Ok{};
}

void Supervisor::handle_wire_events() {
  if (!wire_events_) return;
  std::vector<wireup::RankEvent> events;
  {
    std::lock_guard<std::mutex> lock(wire_events_->mu);
    events.swap(wire_events_->queue);
  }
  uint64_t count = 0;
  (void)!::read(wire_events_->fd, &count, sizeof count);
  for (const auto& e : events) {
    if (e.rank < 0 || static_cast<size_t>(e.rank) >= ranks_.size()) continue;
    Rank& r = ranks_[static_cast<size_t>(e.rank)];
    switch (e.kind) {
      case wireup::RankEvent::Kind::kInit:
        r.mpi_init = true;
        break;
      case wireup::RankEvent::Kind::kFinalize:
        r.mpi_final = true;
        break;
      case wireup::RankEvent::Kind::kAbort: {
        // MPI_Abort ends the whole job, keep-going or not: that is what it asks.
        int code = e.code & 0xff;
        if (code == 0) code = 1;
        std::string msg = fmt::format("rank {} ({}) on {} called MPI_Abort with code {}{}",
                                      r.outcome.rank, str::printable(r.argv0), spec_.node, e.code,
                                      e.message.empty() ? "" : ": " + str::printable(e.message));
        if (!aborting_) begin_abort(code, std::move(msg));
        break;
      }
      case wireup::RankEvent::Kind::kRefused:
        if (sinks_.err) sinks_.err(fmt::format("berth: {}\n", e.message));
        break;
    }
  }
}

Result<void> Supervisor::prepare() {
  if (spec_.apps.empty()) return fail(Errc::kInvalidInput, "the job has no app to launch");
  int total = 0;
  for (size_t a = 0; a < spec_.apps.size(); ++a) {
    const AppSpec& app = spec_.apps[a];
    if (app.argv.empty() || app.argv[0].empty()) {
      return fail(Errc::kInvalidInput, fmt::format("app {} has no command", a));
    }
    if (app.ranks < 1) {
      return fail(Errc::kInvalidInput,
                  fmt::format("app {} ({}): -n must be at least 1, not {}", a,
                              str::printable(app.argv[0]), app.ranks));
    }
    total += app.ranks;
  }
  BERTH_CHECK(check_fd_limit(total));
  BERTH_CHECK(check_proc_limit(total));
  BERTH_TRY(Bindings bindings, compute_bindings(spec_));
  for (const auto& n : bindings.notices) {
    if (sinks_.err) sinks_.err(fmt::format("berth: {}\n", n));
  }
  BERTH_TRY(auto rank_gpus, assign_rank_gpus(spec_.gpus, bindings.cpus));
  BERTH_CHECK(start_wireup());

  // Every environment is built before anything starts: a directive that cannot
  // apply refuses the job, not one rank of it.
  int rank = 0;
  for (size_t a = 0; a < spec_.apps.size(); ++a) {
    const AppSpec& app = spec_.apps[a];
    for (int local = 0; local < app.ranks; ++local, ++rank) {
      Env env = parent_;
      // Wire-up first, so that the user's directives still win (spec 07 §1).
      if (wire_) {
        for (const auto& [k, v] : wire_->env(rank)) env.set(k, v);
      }
      if (spec_.gpus.per_rank > 0) {
        const auto& mine = rank_gpus[static_cast<size_t>(rank)];
        for (const auto& [k, v] : gpu_env(spec_.gpus.variable, mine, parent_)) env.set(k, v);
      }
      BERTH_CHECK(apply_directives(spec_.env, parent_, env));
      BERTH_CHECK(apply_directives(app.env, parent_, env));
      Rank r;
      r.outcome.rank = rank;
      r.outcome.app = static_cast<int>(a);
      r.cpus = bindings.cpus[static_cast<size_t>(rank)];
      r.argv0 = app.argv[0];
      env.set("BERTH_RANK", std::to_string(rank));
      env.set("BERTH_SIZE", std::to_string(total));
      env.set("BERTH_LOCAL_RANK", std::to_string(local));
      env.set("BERTH_APP", std::to_string(a));
      env.set("BERTH_CPUS", r.cpus.empty() ? std::string() : [&] {
        std::vector<std::string> ids;
        for (int c : r.cpus) ids.push_back(std::to_string(c));
        return str::join(ids, ",");
      }());
      ranks_.push_back(std::move(r));
      envs_.push_back(std::move(env));
    }
  }
  return Ok{};
}

Result<void> Supervisor::start_one(Rank& r, size_t index) {
  const AppSpec& app = spec_.apps[static_cast<size_t>(r.outcome.app)];
  SpawnRequest req;
  req.argv = spec_.exec_agent;
  req.argv.insert(req.argv.end(), app.argv.begin(), app.argv.end());
  for (const auto& [k, v] : envs_[index].vars()) req.envp.push_back(k + "=" + v);
  req.cwd = app.cwd;
  req.cpus = r.cpus;
  ReadOnlyPaths read_only;
  if (!app.read_only.empty()) {
    auto planned = plan_read_only(app.read_only);
    if (!planned.ok()) return planned.error();
    read_only = std::move(*planned);
    req.read_only = &read_only;
  }
  const int rank_index = static_cast<int>(index);
  if (wire_ && wire_->child_fd(rank_index) >= 0) req.pass_fds = {wire_->child_fd(rank_index)};

  // Output: per-rank files, or pipes berth forwards.
  int out_w = -1, err_w = -1, in_r = -1;
  if (!spec_.output_dir.empty()) {
    std::string dir = fmt::format("{}/rank.{}", spec_.output_dir, r.outcome.rank);
    ::mkdir(spec_.output_dir.c_str(), 0755);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return fail(Errc::kIo, fmt::format("--output-dir: cannot create {}: {}", dir,
                                         std::strerror(errno)));
    }
    out_w = ::open((dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    err_w = ::open((dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_w < 0 || err_w < 0) {
      close_fd(out_w);
      close_fd(err_w);
      return fail(Errc::kIo, fmt::format("--output-dir: cannot open {}/stdout: {}", dir,
                                         std::strerror(errno)));
    }
  } else {
    int po[2], pe[2];
    if (::pipe2(po, O_CLOEXEC) != 0) return fail(Errc::kIo, "pipe: " + std::string(std::strerror(errno)));
    if (::pipe2(pe, O_CLOEXEC) != 0) {
      ::close(po[0]);
      ::close(po[1]);
      return fail(Errc::kIo, "pipe: " + std::string(std::strerror(errno)));
    }
    r.out.fd = po[0];
    r.err.fd = pe[0];
    r.err.is_stderr = true;
    set_nonblocking(po[0]);
    set_nonblocking(pe[0]);
    out_w = po[1];
    err_w = pe[1];
  }
  // Stdin: rank 0 reads berth's own (the default), every rank gets a copy, or none.
  if (spec_.stdin_mode == StdinMode::kAll) {
    int pi[2];
    if (::pipe2(pi, O_CLOEXEC) == 0) {
      in_r = pi[0];
      r.stdin_w = pi[1];
      set_nonblocking(r.stdin_w);
    }
  } else if (spec_.stdin_mode == StdinMode::kRank0 && r.outcome.rank == 0) {
    in_r = ::fcntl(spec_.stdin_fd, F_DUPFD_CLOEXEC, 3);
  }
  req.stdout_fd = out_w;
  req.stderr_fd = err_w;
  req.stdin_fd = in_r;

  FailureContext ctx;
  ctx.rank = r.outcome.rank;
  ctx.executable = req.argv[0];
  ctx.cwd = app.cwd;
  ctx.node = spec_.node;
  if (!r.cpus.empty()) {
    std::vector<std::string> ids;
    for (int c : r.cpus) ids.push_back(std::to_string(c));
    ctx.cpus = str::join(ids, ",");
  }
  auto spawned = r.child.start(spawner_, req, ctx, [&r](pid_t pid) {
    // Recorded before the child can be reaped: it can never die unattributed.
    r.outcome.pid = pid;
  });
  close_fd(out_w);
  close_fd(err_w);
  close_fd(in_r);
  if (wire_) wire_->close_child_fd(rank_index);  // the rank holds its own copy now
  if (!spawned.ok()) {
    r.outcome.pid = -1;
    r.reaped = true;
    return spawned.error();
  }
  r.outcome.pid = r.child.pid();
  r.outcome.started = true;
  if (spec_.on_started) spec_.on_started(r.outcome.rank, r.child.pid());
  // Exits are seen through the child's pidfd, so that jobs running side by side in one
  // process never take each other's SIGCHLD; without one, SIGCHLD (or a timed sweep)
  // tells.
  if (spec_.report_bindings) {
    sinks_.err(fmt::format("[{},{}] {} bound to {} on {}\n", spec_.job_id, r.outcome.rank,
                           str::printable(r.argv0),
                           r.cpus.empty() ? std::string("nothing (unbound)")
                                          : "cpus " + ctx.cpus,
                           spec_.node));
  }
  return Ok{};
}

void Supervisor::start_ranks() {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    // A signal or a failure that came in while earlier ranks were starting ends the
    // job now: no further rank is started.
    handle_signals();
    reap();
    if (aborting_) {
      for (size_t j = i; j < ranks_.size(); ++j) ranks_[j].reaped = true;
      return;
    }
    auto started = start_one(ranks_[i], i);
    if (!started.ok()) {
      ranks_[i].outcome.failure = started.error().message();
      record_failure(127, started.error().message());
      if (!spec_.keep_going) {
        begin_abort(127, "");
        for (size_t j = i + 1; j < ranks_.size(); ++j) ranks_[j].reaped = true;
        return;
      }
    }
  }
}

void Supervisor::record_failure(int code, std::string message) {
  if (exit_code_ == 0) exit_code_ = code;
  if (!message.empty()) messages_.push_back(std::move(message));
}

void Supervisor::begin_abort(int code, std::string message) {
  record_failure(code, std::move(message));
  if (aborting_) return;
  aborting_ = true;
  escalation_.begin(spec_.grace);
  escalate();
}

void Supervisor::kill_all_groups(int sig) {
  for (const Rank& r : ranks_) r.child.signal(sig);
}

void Supervisor::escalate() {
  // Send every step that is due; the loop's poll timeout wakes us for the next one.
  // Live ranks' groups; SIGKILL also reaches groups whose leader is gone but whose
  // descendants live on (Supervised::signal).
  for (int sig : escalation_.due()) kill_all_groups(sig);
}

void Supervisor::handle_signals() {
  if (sigfd_ < 0) return;
  signalfd_siginfo si{};
  while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) continue;  // reap() looks at every rank
    begin_abort(128 + sig, fmt::format("berth received {}: ending the job", signal_name(sig)));
  }
}

void Supervisor::reap() {
  // What the ranks said on the wire-up comes first: a finalize queued before a rank
  // exited must be seen before its exit is judged.
  handle_wire_events();
  for (Rank& r : ranks_) {
    if (r.reaped || !r.outcome.started || r.outcome.pid <= 0) continue;
    // The group stays: what a rank started is ended with the job (loop()), not before.
    if (!r.child.try_reap(Supervised::Group::kLeave)) continue;
    r.reaped = true;
    std::string msg;
    if (r.child.lost()) {
      // Taken by a waitpid(-1) elsewhere in the process: it ended, how is unknown.
      msg = fmt::format("rank {} ({}) on {} was reaped by another part of berth: its exit "
                        "status is unknown",
                        r.outcome.rank, str::printable(r.argv0), spec_.node);
      rank_failed(1, std::move(msg));
      continue;
    }
    ExitStatus s = *r.child.status();
    r.outcome.status = s;
    if (s.ok() && r.mpi_init && !r.mpi_final && wire_) {
      // A finalize the rank sent without waiting for its answer may still be in the
      // server's buffer: have it served before judging (spec 07 §1.1).
      wire_->sync();
      handle_wire_events();
    }
    if (s.ok() && r.mpi_init && !r.mpi_final) {
      // Its peers may be waiting for it in a collective that can never complete.
      msg = fmt::format(
          "rank {} ({}) on {} exited with status 0 after MPI_Init without "
          "calling MPI_Finalize",
          r.outcome.rank, str::printable(r.argv0), spec_.node);
      rank_failed(1, std::move(msg));
      continue;
    }
    if (s.ok()) continue;
    msg = fmt::format("rank {} ({}) on {} {}", r.outcome.rank, str::printable(r.argv0), spec_.node,
                      describe(s));
    rank_failed(s.exit_code(), std::move(msg));
  }
}

void Supervisor::rank_failed(int code, std::string message) {
  // A rank ended by berth's own escalation is not a new failure.
  if (aborting_) return;
  if (spec_.keep_going) {
    record_failure(code, std::move(message));
  } else {
    begin_abort(code, std::move(message));
  }
}

void Supervisor::emit(const Rank& r, bool is_stderr, std::string_view line) {
  const auto& sink = is_stderr ? sinks_.err : sinks_.out;
  if (spec_.output == OutputMode::kXml) {
    sink(xml_line(r.outcome.rank, is_stderr, line));
    return;
  }
  std::string text = line_prefix(spec_, r.outcome.rank, r.outcome.pid, is_stderr);
  text.append(line);
  sink(text);
}

void Supervisor::drain(Stream& s, const Rank& r, bool eof_flush) {
  if (s.fd < 0) return;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.pending.append(buf, static_cast<size_t>(n));
      // Forward whole lines as they complete: line-buffered, never a line split
      // between two ranks' output.
      size_t start = 0;
      for (size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        emit(r, s.is_stderr, std::string_view(s.pending).substr(start, nl - start + 1));
      }
      s.pending.erase(0, start);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && !eof_flush) return;
    // EOF (or a forced close): a trailing partial line is flushed with a newline.
    if (!s.pending.empty()) {
      s.pending += '\n';
      emit(r, s.is_stderr, s.pending);
      s.pending.clear();
    }
    close_fd(s.fd);
    return;
  }
}

void Supervisor::forward_stdin() {
  char buf[65536];
  ssize_t n = ::read(spec_.stdin_fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    stdin_open_ = false;
    for (Rank& r : ranks_) close_fd(r.stdin_w);
    return;
  }
  for (Rank& r : ranks_) {
    if (r.stdin_w < 0) continue;
    // A rank that does not read its stdin must not stall the others: what does not
    // fit into its pipe now is dropped for it, and its stdin closed.
    ssize_t w = ::write(r.stdin_w, buf, static_cast<size_t>(n));
    if (w != n) close_fd(r.stdin_w);
  }
}

bool Supervisor::all_done() const {
  for (const Rank& r : ranks_) {
    if (!r.reaped || r.out.fd >= 0 || r.err.fd >= 0) return false;
  }
  return true;
}

void Supervisor::loop() {
  for (;;) {
    bool all_reaped = std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.reaped; });
    if (all_reaped && !drain_until_) {
      // Everything a rank spawned goes with it; then what is left in the pipes is
      // drained for a bounded time (a surviving descendant could hold them open).
      kill_all_groups(SIGKILL);
      drain_until_ = clock_.steady() + std::max(spec_.grace, std::chrono::milliseconds(200));
    }
    if (all_done()) return;
    if (drain_until_ && clock_.steady() >= *drain_until_) {
      for (Rank& r : ranks_) {
        drain(r.out, r, true);
        drain(r.err, r, true);
      }
      return;
    }

    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> who;  // rank index, 0 = out, 1 = err, -1 = other
    if (sigfd_ >= 0) {
      fds.push_back({sigfd_, POLLIN, 0});
      who.emplace_back(0, -1);
    }
    if (spec_.cancel_fd >= 0 && !aborting_) {
      fds.push_back({spec_.cancel_fd, POLLIN, 0});
      who.emplace_back(0, -4);
    }
    if (wire_events_) {
      fds.push_back({wire_events_->fd, POLLIN, 0});
      who.emplace_back(0, -5);
    }
    bool sweep = false;  // a live rank without a pidfd and no SIGCHLD to tell of it
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const Rank& r = ranks_[i];
      if (r.reaped || !r.outcome.started) continue;
      if (r.child.pidfd() >= 0) {
        fds.push_back({r.child.pidfd(), POLLIN, 0});
        who.emplace_back(i, -3);
      } else if (sigfd_ < 0) {
        sweep = true;
      }
    }
    if (stdin_open_) {
      fds.push_back({spec_.stdin_fd, POLLIN, 0});
      who.emplace_back(0, -2);
    }
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].out.fd >= 0) {
        fds.push_back({ranks_[i].out.fd, POLLIN, 0});
        who.emplace_back(i, 0);
      }
      if (ranks_[i].err.fd >= 0) {
        fds.push_back({ranks_[i].err.fd, POLLIN, 0});
        who.emplace_back(i, 1);
      }
    }
    // Wake for the next escalation step, the timeout or the end of draining.
    auto now = clock_.steady();
    std::optional<TimePoint> wake;
    auto consider = [&](TimePoint t) {
      if (!wake || t < *wake) wake = t;
    };
    if (auto next = escalation_.next_at(); aborting_ && next) consider(*next);
    if (deadline_ && !aborting_) consider(*deadline_);
    if (drain_until_) consider(*drain_until_);
    if (sweep) consider(now + std::chrono::milliseconds(50));
    int n = ::poll(fds.data(), fds.size(), poll_timeout_ms(wake, now));
    if (n < 0 && errno != EINTR) return;
    for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      auto [i, kind] = who[k];
      if (kind == -1) {
        handle_signals();
      } else if (kind == -3) {
        // reap() below collects it.
      } else if (kind == -4) {
        begin_abort(130, "the job was cancelled");
      } else if (kind == -5) {
        handle_wire_events();
      } else if (kind == -2) {
        forward_stdin();
      } else {
        Rank& r = ranks_[i];
        drain(kind == 0 ? r.out : r.err, r, false);
      }
    }
    reap();
    if (deadline_ && !aborting_ && clock_.steady() >= *deadline_) {
      timed_out_ = true;
      begin_abort(124, fmt::format("the job timed out after {} ms", spec_.timeout->count()));
    }
    if (aborting_) escalate();
  }
}

Result<JobOutcome> Supervisor::run() {
  BERTH_CHECK(prepare());

  // Berth's own SIGINT/SIGTERM/SIGHUP and SIGCHLD arrive through a signalfd, so the
  // loop sees them between two polls instead of in a handler. The spawner resets the
  // mask in each child.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, &old_mask_);
  if (spec_.own_signals) {
    sigfd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd_ < 0) {
      pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
      return fail(Errc::kIo, fmt::format("signalfd: {}", std::strerror(errno)));
    }
  }
  if (spec_.timeout) deadline_ = clock_.steady() + *spec_.timeout;
  stdin_open_ = spec_.stdin_mode == StdinMode::kAll;

  start_ranks();
  loop();
  wire_.reset();  // off the wire-up servers: the job's namespace is freed now

  close_fd(sigfd_);
  for (Rank& r : ranks_) {
    close_fd(r.out.fd);
    close_fd(r.err.fd);
    close_fd(r.stdin_w);
  }
  // Signals that arrived for berth itself stay pending in the restored mask only if
  // they were blocked before; otherwise drop them here by not unblocking them twice.
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);

  JobOutcome outcome;
  outcome.exit_code = exit_code_;
  outcome.timed_out = timed_out_ && exit_code_ == 124;
  for (Rank& r : ranks_) outcome.ranks.push_back(r.outcome);
  outcome.messages = messages_;
  return outcome;
}

}  // namespace

Result<Bindings> compute_bindings(const JobSpec& spec) {
  Bindings b;
  std::vector<std::vector<int>>& out = b.cpus;
  int rank = 0;
  size_t used = 0;  // CPUs of the pool the apps before this one bound their ranks to
  for (size_t a = 0; a < spec.apps.size(); ++a) {
    const AppSpec& app = spec.apps[a];
    const auto each = static_cast<size_t>(std::max(1, app.cpus_per_rank));
    used += static_cast<size_t>(app.ranks) * each;
    const std::vector<int>* pool = &spec.usable_cores;
    if (spec.bind == BindTo::kHwthread) pool = &spec.hwthreads;
    if (app.cpu_set) pool = &*app.cpu_set;
    if (spec.bind == BindTo::kNone) {
      for (int i = 0; i < app.ranks; ++i, ++rank) {
        out.push_back(app.cpu_set ? *app.cpu_set : std::vector<int>());
      }
      continue;
    }
    if (pool->empty()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("app {}: no CPUs to bind to; use --bind-to none", a));
    }
    // Ranks take CPUs in order; across apps without their own --cpu-set they go on
    // where the previous app stopped, so MPMD apps do not share a core.
    size_t offset = app.cpu_set ? 0 : used - static_cast<size_t>(app.ranks) * each;
    const char* unit = spec.bind == BindTo::kHwthread ? "hardware threads" : "cores";
    const size_t need = static_cast<size_t>(app.ranks) * each;
    if (offset + need > pool->size() && spec.oversubscribe) {
      // Unbound, as mpirun does when oversubscribed: pinning two ranks to one core
      // would halve both, while the kernel can spread them as load allows. An app
      // with its own --cpu-set stays within it.
      b.notices.push_back(
          fmt::format("app {} has {} rank(s) and the job {} usable {}{}: binding is off for it "
                      "(--oversubscribe)",
                      a, app.ranks, pool->size(), unit, app.cpu_set ? " in its --cpu-set" : ""));
      for (int i = 0; i < app.ranks; ++i, ++rank) {
        out.push_back(app.cpu_set ? *app.cpu_set : std::vector<int>());
      }
      continue;
    }
    if (offset + need > pool->size()) {
      return fail(Errc::kRefused,
                  fmt::format("{} rank(s) of app {} need {} {} to bind to {} each, but only {} "
                              "are usable{}; use fewer ranks, --oversubscribe or --bind-to none",
                              app.ranks, a, offset + need, unit, each, pool->size(),
                              app.cpu_set ? " in its --cpu-set" : ""));
    }
    for (int i = 0; i < app.ranks; ++i, ++rank) {
      auto first = pool->begin() + static_cast<std::ptrdiff_t>(offset + static_cast<size_t>(i) * each);
      out.emplace_back(first, first + static_cast<std::ptrdiff_t>(each));
    }
  }
  return b;
}

std::string line_prefix(const JobSpec& spec, int rank, pid_t pid, bool is_stderr) {
  const char* stream = is_stderr ? "stderr" : "stdout";
  switch (spec.output) {
    case OutputMode::kPlain:
    case OutputMode::kXml:
      return "";
    case OutputMode::kTag:
      return fmt::format("[{},{}]<{}>: ", spec.job_id, rank, stream);
    case OutputMode::kTagDetailed:
      return fmt::format("[{},{}][{}:{}]<{}>: ", spec.job_id, rank, spec.node, pid, stream);
    case OutputMode::kTimestamp: {
      const Clock& clock = spec.clock != nullptr ? *spec.clock : Clock::real();
      return fmt::format("{} [{},{}]<{}>: ", utc_text(clock.wall(), /*millis=*/true), spec.job_id,
                         rank, stream);
    }
  }
  return "";
}

std::string xml_line(int rank, bool is_stderr, std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const char* tag = is_stderr ? "stderr" : "stdout";
  return fmt::format("<{} rank=\"{}\">{}</{}>\n", tag, rank, str::xml_escape(line), tag);
}

Result<JobOutcome> run_job(const JobSpec& spec, const Env& parent, Spawner& spawner,
                           const OutputSinks& sinks) {
  Supervisor s(spec, parent, spawner, sinks);
  return s.run();
}

}  // namespace berth::launch
