// berth run: a pipeline over the store (spec 04, spec 06). The flags, the context,
// the session (pipeline/session.h), the outcome printed: nothing else happens here.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "cli/last_run.h"
#include "cli/run_agents.h"
#include "cli/run_live.h"
#include "cli/version.h"
#include "pipeline/run_listing.h"
#include "pipeline/session.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

// Turns SIGINT/SIGTERM/SIGHUP into a readable descriptor that every running step's
// supervisor polls: Ctrl-C ends the run cleanly and the next run resumes.
class Interrupts {
 public:
  Interrupts() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
    pthread_sigmask(SIG_BLOCK, &mask, &old_);
    sigset_t wanted;
    sigemptyset(&wanted);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&wanted, s);
    sigfd_ = signalfd(-1, &wanted, SFD_CLOEXEC);
    if (pipe2(cancel_, O_CLOEXEC) != 0 || pipe2(stop_, O_CLOEXEC) != 0) return;
    watcher_ = std::thread([this] {
      pollfd fds[2] = {{sigfd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      while (poll(fds, 2, -1) < 0) {
      }
      if (fds[0].revents & POLLIN) {
        signalfd_siginfo si{};
        if (read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
          signal_ = static_cast<int>(si.ssi_signo);
        }
        char c = 1;
        [[maybe_unused]] ssize_t w = write(cancel_[1], &c, 1);
      }
    });
  }
  ~Interrupts() {
    char c = 1;
    [[maybe_unused]] ssize_t w = write(stop_[1], &c, 1);
    if (watcher_.joinable()) watcher_.join();
    for (int fd : {sigfd_, cancel_[0], cancel_[1], stop_[0], stop_[1]}) {
      if (fd >= 0) close(fd);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  int cancel_fd() const { return cancel_[0]; }
  int signal() const { return signal_; }

 private:
  sigset_t old_{};
  int sigfd_ = -1;
  int cancel_[2] = {-1, -1};
  int stop_[2] = {-1, -1};
  std::thread watcher_;
  std::atomic<int> signal_{0};
};

struct RunFlags {
  AllocFlags alloc;
  MachineFlags machine;
  std::string pipeline;
  std::vector<std::string> targets;
  std::vector<std::string> config;       // --config NAME=VALUE
  std::vector<std::string> configfiles;  // --configfile FILE
  std::string store;
  std::string results;
  std::string cache;
  bool dry_run = false;
  bool commands = false;    // --commands: a dry run's would-run steps' commands
  bool every_step = false;  // --every-step: a dry run's every step, never summarised
  bool fail_fast = false;
  bool keep_failed = false;
  int jobs = 0;
  bool keep_going = false;
  bool no_step_output = false;
  std::string format = "text";
  // --worker [NAME]: absent, or the name given ("" = generate one).
  std::optional<std::string> worker;
  std::string worker_text;
  CLI::Option* worker_opt = nullptr;
  std::string lease = "10m";
  std::string store_patience = "3m";
  std::string agents = "auto";
};

std::string clock_text(double seconds) {
  auto s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// The progress line on a terminal: rewritten in place, at most ten times a second.
std::function<void(const pipeline::Progress&)> progress_line() {
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [last](const pipeline::Progress& p) {
    auto now = std::chrono::steady_clock::now();
    if (p.done != p.total && now - *last < std::chrono::milliseconds(100)) return;
    *last = now;
    std::string eta = p.eta_s < 0 ? "" : ", ETA " + clock_text(p.eta_s);
    std::string deferred = p.deferred ? fmt::format(", {} claimed elsewhere", p.deferred) : "";
    std::string wait = p.store_wait.empty() ? "" : ", " + p.store_wait;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %d executed, %d cached, %d failed, %zu running%s, %s%s%s",
                 p.done, p.total, p.executed, p.cached, p.failed, p.running, deferred.c_str(),
                 clock_text(p.elapsed_s).c_str(), eta.c_str(), wait.c_str());
  };
}

// The outcome on stdout: the JSON report, or the steps worth a line and a summary.
void print_outcome(const pipeline::RunOutcome& out, const RunFlags& f) {
  if (out.report) {
    // What a launcher did not do that steps asked for, once per run where it is seen.
    for (const auto& n : out.report->launch_notices) std::fprintf(stderr, "berth: %s\n", n.c_str());
  }
  if (f.format == "json") {
    std::fflush(stdout);
    if (auto w = out.write_report(STDOUT_FILENO); !w.ok()) {
      std::fprintf(stderr, "berth: %s\n", w.error().message().c_str());
    }
    return;
  }
  if (out.settled) {
    std::printf(
        "%zu step(s): 0 executed, %zu cached, 0 failed, 0 skipped, 0 refused in "
        "%.2f s\n",
        out.steps, out.steps, out.elapsed_s);
    return;
  }
  const pipeline::RunReport& rep = *out.report;
  pipeline::ListingOptions lo{f.dry_run, f.every_step, f.commands, nullptr};
  // A failure says where its whole output is kept.
  lo.hint = [&f](const pipeline::StepRecord& s) {
    return s.log.empty() ? "" : "; its output: " + log_command(f.pipeline, s.name);
  };
  for (const auto& line : pipeline::step_lines(rep, lo)) std::printf("%s\n", line.c_str());
  for (const auto& p : rep.problems) std::printf("problem: %s\n", p.c_str());
  for (const auto& d : rep.divergences) {
    std::printf("divergence: %s output %s: ours %s, theirs %s\n", d.step.c_str(), d.output.c_str(),
                d.ours.c_str(), d.theirs.c_str());
  }
  if (f.worker) {
    std::printf(
        "worker %s: %d lease(s) acquired, %d extended, %d deferral(s), %d re-arm(s), "
        "%d released, %d lock-free%s\n",
        out.worker.c_str(), rep.leases.acquired, rep.leases.extended, rep.leases.held,
        rep.leases.rearms, rep.leases.released, rep.leases.lock_free,
        rep.leases.lost ? fmt::format(", {} lost to another worker", rep.leases.lost).c_str()
                        : "");
  }
  std::printf("%s\n", pipeline::summary_line(rep).c_str());
}

int run_pipeline(const RunFlags& f) {
  if ((f.commands || f.every_step) && !f.dry_run) {
    return report(
        Error(Errc::kInvalidInput,
              fmt::format("{} goes with --dry-run", f.commands ? "--commands" : "--every-step")));
  }
  if (f.fail_fast && f.keep_going) {
    return report(Error(Errc::kInvalidInput,
                        "--fail-fast and --keep-going ask for opposite things; give one"));
  }
  // 1. What berth was given, and where: the allocation, this node, its launcher.
  auto ctx = build_context(f.alloc, f.machine);
  if (!ctx.ok()) return report(ctx.error());

  // 2. The session: the pipeline, the pool, the cache, the store (pipeline/session.h).
  pipeline::SessionOptions o;
  o.pipeline = f.pipeline;
  o.targets = f.targets;
  o.config.assignments = f.config;
  o.config.files = f.configfiles;
  o.store = f.store;
  o.results = f.results;
  o.cache = f.cache;
  o.dry_run = f.dry_run;
  o.dry_run_commands = f.commands;
  o.fail_fast = f.fail_fast && !f.keep_going;
  o.keep_failed = f.keep_failed;
  o.jobs = f.jobs;
  o.worker = f.worker;
  o.lease = f.lease;
  o.store_patience = f.store_patience;
  o.engine_version = std::string("berth ") + BERTH_VERSION + " (" + BERTH_GIT_COMMIT + ")";
  o.process_exits = true;
  // What runs now, shown to `berth status` and `berth log -f` (run_live.h).
  auto live = run_live_board(f.pipeline, f.cache, f.worker.has_value(), f.dry_run);
  o.live = live.get();
  auto say = [](std::string_view m) {
    std::fprintf(stderr, "berth: %.*s\n", static_cast<int>(m.size()), m.data());
  };
  pipeline::SessionPlace place;
  place.nodes = ctx->pool_nodes();
  // One agent on each other node, started once through the allocation's launcher, when
  // steps are about to run (spec 08); the pool places on what each node says it has.
  RunAgents agents;
  if (!f.dry_run) place.for_steps = [&](pipeline::SessionPlace& p) -> Result<void> {
    BERTH_TRY(agents, start_run_agents(*ctx, f.agents, f.worker.has_value(), f.dry_run,
                                       f.machine, say));
    p.nodes = ctx->pool_nodes(agents.offers);
    std::erase_if(p.nodes, [&](const place::PoolNode& n) {
      return std::find(agents.left_out.begin(), agents.left_out.end(), n.name) !=
             agents.left_out.end();
    });
    p.agents = agents.agents.get();
    return Ok{};
  };
  place.host = ctx->here();
  place.machine = ctx->machine;
  place.launcher = &ctx->launcher;
  place.probe = &version_probe();
  bool tty = isatty(2) && f.format == "text";
  pipeline::SessionSinks sinks;
  sinks.say = say;
  sinks.progress = with_board(live.get(), tty ? progress_line() : nullptr);
  // Each step's output reaches the user once, every line prefixed with its name, unless
  // told not to: it is kept either way (berth log).
  if (!f.no_step_output) sinks.step_output = [tty](const std::string& step, std::string_view text) {
    std::string prefixed = tty ? "\r\033[K" : "";
    for (auto line : str::split(text, '\n')) {
      if (!line.empty()) prefixed += fmt::format("[{}] {}\n", step, line);
    }
    std::fwrite(prefixed.data(), 1, prefixed.size(), stderr);
  };
  // The steps' environment is berth's own (an --env-file stands in for the
  // scheduler's variables only), as are the store's credentials.
  auto session = pipeline::Session::open(std::move(o), std::move(place), process_env(), sinks);
  if (!session.ok()) return report(session.error());
  // The board says the run ended before the session lets the cache index go: the next
  // run, waiting for the index, begins its own board only then.
  struct EndBoardFirst {
    std::unique_ptr<pipeline::LiveBoard>& board;
    ~EndBoardFirst() { board.reset(); }
  } end_board{live};

  // 3. Run, with Ctrl-C ending running steps cleanly.
  Interrupts interrupts;
  if (live) live->begin();
  auto outcome = (*session)->run(interrupts.cancel_fd());
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (std::string why = live ? live->problem() : ""; !why.empty()) {
    std::fprintf(stderr, "berth: berth status could not be shown this run: %s\n", why.c_str());
  }
  if (!outcome.ok()) return report(outcome.error());

  // 4. Say how it went.
  print_outcome(*outcome, f);
  std::fflush(stdout);
  if (interrupts.signal()) return 128 + interrupts.signal();
  int code = outcome->exit_code;
  // The report is left to the operating system, as the session leaves its graph:
  // freeing 10,000 steps one allocation at a time is time the user waits for.
  // Reachable from here, so leak checkers do not count it.
  static auto* left = new std::vector<pipeline::RunOutcome>;
  left->push_back(std::move(*outcome));
  return code;
}

}  // namespace

std::function<int()> setup_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->required();
  app.add_option("targets", f->targets,
                 "Steps to run, with everything they need: names or shell-style patterns "
                 "('count-*') of expanded steps (default: every step)");
  app.add_option("--config", f->config,
                 "Override a value of the pipeline's [config]: NAME=VALUE (repeatable)")
      ->expected(1)
      ->take_all();
  app.add_option("--configfile", f->configfiles,
                 "Override [config] values from a TOML file of NAME = value lines")
      ->expected(1)
      ->take_all();
  app.add_option("--store", f->store, "Store URL (default file://<dir>/.berth/store)");
  app.add_option("--results", f->results, "Results directory (default <dir>/results for pipeline.toml, <dir>/results-<stem> for any other pipeline file)");
  app.add_option("--cache", f->cache,
                 "Cache directory: index, staging (default <dir>/.berth/cache, and "
                 "<dir>/.berth/cache/workers/NAME for a worker)");
  f->worker_opt =
      app.add_option("--worker", f->worker_text,
                     "Run as one of any number of workers dividing the pipeline through leases "
                     "in the shared --store; NAME is generated when not given")
          ->expected(0, 1);
  app.add_option("--lease", f->lease, "How long a worker's claim on a step holds")
      ->capture_default_str();
  app.add_option("--store-patience", f->store_patience,
                 "How long an unanswering store is waited for before a step fails")
      ->capture_default_str();
  app.add_option("--agents", f->agents,
                 "Berth agents on the allocation's other nodes, started once through its "
                 "launcher, run the steps placed there: auto, off (one launcher call per "
                 "step), all (this node's steps too)")
      ->check(CLI::IsMember({"auto", "off", "all"}))
      ->capture_default_str();
  app.add_flag("--dry-run", f->dry_run, "Say what would run and why; run nothing");
  app.add_flag("--commands", f->commands,
               "With --dry-run: print each step that would run as NAME: COMMAND, the command "
               "as it would be run in its staging directory");
  app.add_flag("--every-step", f->every_step,
               "With --dry-run: a line for every step, never a summary per step template");
  app.add_flag("--fail-fast", f->fail_fast, "Stop starting steps after the first failure");
  app.add_flag("--keep-failed", f->keep_failed,
               "Keep a failed step's staging directory, with a command.sh that runs it "
               "again (in <dir>/.berth/pipelines/<file>/failed/<step>/)");
  app.add_option("-j,--jobs", f->jobs,
                 "Run at most N steps at once (default: as many as the pool fits)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--keep-going", f->keep_going, "Run every independent step (the default)");
  app.add_flag("--no-step-output", f->no_step_output,
               "Do not print steps' output on stderr (it is kept: berth log STEP)");
  app.add_option("--format", f->format, "Output: text or the JSON run report")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  add_machine_flags(app, f->machine);
  add_alloc_flags(app, f->alloc);
  return [f] {
    if (f->worker_opt->count() > 0) f->worker = f->worker_text;
    return run_pipeline(*f);
  };
}

}  // namespace berth::cli
