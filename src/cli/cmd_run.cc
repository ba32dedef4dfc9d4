// berth run, berth report, berth methods, berth store: pipelines over the store
// (spec 04, spec 05).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "cli/version.h"
#include "pipeline/executor.h"
#include "pipeline/graph.h"
#include "pipeline/pipeline_file.h"
#include "pipeline/lease.h"
#include "pipeline/methods.h"
#include "pipeline/settled.h"
#include "pipeline/worker.h"
#include "store/file_store.h"
#include "store/posix_io.h"
#include "store/tiered_store.h"
#include "store/url.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

namespace fs = std::filesystem;

// Where a pipeline keeps its state: .berth/ beside the file.
std::string berth_dir_for(const std::string& pipeline_path) {
  fs::path p = fs::absolute(pipeline_path).parent_path();
  return (p / ".berth").string();
}

Result<std::unique_ptr<store::ObjectStore>> open_store_url(const std::string& url) {
  BERTH_TRY(store::StoreUrl u, store::parse_store_url(url, fs::current_path().string()));
  return store::open_store(u, Env::from_process());
}

std::string platform() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return fmt::format("{} {} {}", u.sysname, u.release, u.machine);
}

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
  std::string store;
  std::string results;
  std::string cache;
  bool dry_run = false;
  bool fail_fast = false;
  bool keep_going = false;
  std::string format = "text";
  // --worker [NAME]: absent, or the name given ("" = generate one).
  std::optional<std::string> worker;
  std::string worker_text;
  CLI::Option* worker_opt = nullptr;
  std::string lease = "10m";
};

std::string summary_line(const pipeline::RunReport& r) {
  using pipeline::StepState;
  return fmt::format("{} step(s): {} executed, {} cached, {} failed, {} skipped, {} refused{} "
                     "in {:.2f} s",
                     r.steps.size(), r.count(StepState::kExecuted), r.count(StepState::kCached),
                     r.count(StepState::kFailed), r.count(StepState::kSkipped),
                     r.count(StepState::kRefused),
                     r.count(StepState::kCancelled)
                         ? fmt::format(", {} cancelled", r.count(StepState::kCancelled))
                         : "",
                     r.elapsed_s);
}

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
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %d executed, %d cached, %d failed, %zu running%s, %s%s",
                 p.done, p.total, p.executed, p.cached, p.failed, p.running, deferred.c_str(),
                 clock_text(p.elapsed_s).c_str(), eta.c_str());
  };
}

// Step name -> what its key was computed from, in the previous run's report.
std::map<std::string, std::string> previous_bases(const std::string& report_path) {
  std::map<std::string, std::string> out;
  auto text = files::read_file(report_path);
  if (!text.ok()) return out;
  // Only each step's name and basis are kept while parsing: the rest of a 10,000-step
  // report (outputs, reasons, times) is megabytes nobody reads here.
  using json = nlohmann::json;
  auto keep = [](int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key) return true;
    if (depth == 1) return parsed == "steps";
    if (depth == 3) return parsed == "name" || parsed == "basis";
    return true;
  };
  if (str::json_deeper_than(*text, pipeline::kMaxReportDepth)) return out;
  auto j = json::parse(*text, keep, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("steps") || !j["steps"].is_array()) {
    return out;
  }
  for (const auto& s : j["steps"]) {
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string()) continue;
    if (!s.contains("basis") || !s["basis"].is_object()) continue;
    out[s["name"].get<std::string>()] = s["basis"].dump();
  }
  return out;
}

// Stores a run's report with the run: a row whose steps are an object, so that runs
// reporting the same steps (every settled run) store them once, and a report of any
// size fits a row. The steps are `steps_object` when it is already stored, else
// `steps()` is stored. Returns the steps' object name.
Result<std::string> store_report(const pipeline::RunReport& r, std::string steps_object,
                                 const std::function<Result<std::string>()>& steps,
                                 std::optional<size_t> settled_steps,
                                 store::ObjectStore& shared) {
  bool present = false;
  if (!steps_object.empty()) {
    auto has = shared.has_object(steps_object);
    present = has.ok() && *has;
  }
  if (!present) {
    BERTH_TRY(std::string bytes, steps());
    BERTH_TRY(steps_object, shared.put_object(bytes));
  }
  auto addr = store::row_address(
      "runs", fmt::format("{}-{}{}", r.started, r.worker.empty() ? "" : r.worker + "-", getpid()));
  BERTH_CHECK(shared.put_row(addr, pipeline::report_json(r, steps_object, true, settled_steps)));
  return steps_object;
}

// An ordinary run's report: written beside the pipeline, then stored with the run. What
// cannot be written is said on stderr. Returns the steps' object name, "" when the
// report could not be stored.
//
// The report beside the pipeline is replaced atomically but not fsynced: the runs row
// is the durable record, and in a file:// store on the same filesystem the row's own
// barrier (one syncfs, spec 05 §4) makes the file durable with it.
std::string publish_report(const pipeline::RunReport& r, const std::string& steps,
                           const std::string& full, store::ObjectStore& shared,
                           const std::string& report_path) {
  if (auto w = files::write_file_atomic(report_path, full, false); !w.ok()) {
    std::fprintf(stderr, "berth: %s\n", w.error().message().c_str());
  }
  auto stored = store_report(
      r, "", [&]() -> Result<std::string> { return steps; }, std::nullopt, shared);
  if (!stored.ok()) {
    std::fprintf(stderr, "berth: the run's report was not stored: %s\n",
                 stored.error().message().c_str());
  }
  return stored.ok() ? *stored : "";
}

// Writes `n` bytes of the file `in` (from its start) to `out` where it stands, by the
// kernel (sendfile), falling back to read and write where sendfile cannot.
Result<void> send_file(int in, int out, size_t n, const std::string& what) {
  off_t off = 0;
  while (static_cast<size_t>(off) < n) {
    ssize_t k = ::sendfile(out, in, &off, n - static_cast<size_t>(off));
    if (k > 0) continue;
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) return fail(Errc::kIo, what + ": ended early");
    if (errno != EINVAL && errno != ENOSYS) return store::posix::os_error(what, "sendfile", errno);
    char buf[1 << 16];
    while (static_cast<size_t>(off) < n) {
      ssize_t got = ::pread(in, buf, std::min(sizeof buf, n - static_cast<size_t>(off)), off);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return fail(Errc::kIo, what + ": ended early");
      BERTH_CHECK(store::posix::write_all(out, buf, static_cast<size_t>(got), what));
      off += got;
    }
  }
  return Ok{};
}

// head, then the steps file, then the report's tail, to `out`.
Result<void> write_report_to(int out, std::string_view head, int steps_fd, size_t steps_bytes,
                             const std::string& what) {
  BERTH_CHECK(store::posix::write_all(out, head.data(), head.size(), what));
  BERTH_CHECK(send_file(steps_fd, out, steps_bytes, what));
  return store::posix::write_all(out, pipeline::kReportTail.data(), pipeline::kReportTail.size(),
                                 what);
}

// The same, to `path`, atomically (a temporary file renamed over it), not fsynced, as
// publish_report() writes it.
Result<void> write_report_file(const std::string& path, std::string_view head, int steps_fd,
                               size_t steps_bytes) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return store::posix::os_error(tmp, "create", errno);
  auto w = write_report_to(fd, head, steps_fd, steps_bytes, tmp);
  ::close(fd);
  if (w.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    w = store::posix::os_error(path, "rename onto", errno);
  }
  if (!w.ok()) ::unlink(tmp.c_str());
  return w;
}

// A run answered from its settled record (settled.h), when the record still holds and
// its steps file is whole: the report written, stored and printed, and the exit code.
// nullopt when the record does not hold: the caller runs the ordinary way.
std::optional<int> run_settled(const RunFlags& f, const pipeline::Settled& settled,
                               const std::string& steps_path, const std::string& started,
                               std::chrono::steady_clock::time_point t0, place::Pool& pool,
                               store::ObjectStore& store, store::ObjectStore& shared,
                               const std::string& report_path) {
  if (steps_path.empty()) return std::nullopt;
  int steps_fd = ::open(steps_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (steps_fd < 0) return std::nullopt;
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{steps_fd};
  struct stat st {};
  if (::fstat(steps_fd, &st) != 0 || static_cast<size_t>(st.st_size) != settled.steps_bytes) {
    return std::nullopt;
  }
  if (pipeline::settled_difference(settled, pool.nodes(), store, place::VersionProbe::real())) {
    return std::nullopt;
  }
  pipeline::RunReport header;
  header.pipeline = settled.pipeline;
  header.store = store.describe();
  header.started = started;
  header.notices = store.notices();
  // A steps file whose bytes are not the object's is not used: checked when the object
  // must be stored again, before anything is written.
  std::string steps_object = settled.steps_object;
  if (auto has = shared.has_object(steps_object); !has.ok() || !*has) {
    auto bytes = files::read_file(steps_path, settled.steps_bytes + 1);
    auto name = bytes.ok() ? shared.put_object(*bytes) : Result<std::string>(bytes.error());
    if (name.ok() && *name != steps_object) return std::nullopt;
    if (!name.ok()) steps_object.clear();
  }
  header.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string head = pipeline::report_json_head(header, settled.steps);
  if (auto w = write_report_file(report_path, head, steps_fd, settled.steps_bytes); !w.ok()) {
    std::fprintf(stderr, "berth: %s\n", w.error().message().c_str());
  }
  auto stored = store_report(
      header, steps_object,
      [&]() -> Result<std::string> { return fail(Errc::kIo, "the steps' object is missing"); },
      settled.steps, shared);
  if (!stored.ok()) {
    std::fprintf(stderr, "berth: the run's report was not stored: %s\n",
                 stored.error().message().c_str());
  }
  if (f.format == "json") {
    std::fflush(stdout);
    if (auto w = write_report_to(STDOUT_FILENO, head, steps_fd, settled.steps_bytes, "stdout");
        !w.ok()) {
      std::fprintf(stderr, "berth: %s\n", w.error().message().c_str());
      return kExitFailure;
    }
  } else {
    std::printf("%zu step(s): 0 executed, %zu cached, 0 failed, 0 skipped, 0 refused in "
                "%.2f s\n",
                settled.steps, settled.steps, header.elapsed_s);
    std::fflush(stdout);
  }
  return kExitOk;
}

int run_pipeline(const RunFlags& f) {
  // 1. The pipeline file, expanded and checked before anything runs; unless the last
  // run of these very bytes settled (settled.h), when parsing waits until the record
  // turns out not to hold.
  auto text = files::read_file(f.pipeline);
  if (!text.ok()) return report(text.error());
  std::string bdir = berth_dir_for(f.pipeline);
  std::string settled_name = fs::absolute(f.pipeline).lexically_normal().string();
  std::string engine = std::string("berth ") + BERTH_VERSION + " (" + BERTH_GIT_COMMIT + ")";
  std::string url = f.store.empty() ? "file://" + bdir + "/store" : f.store;
  std::string results_dir = f.results.empty()
                                ? (fs::path(bdir).parent_path() / "results").string()
                                : f.results;
  std::string cwd = fs::current_path().string();
  std::string abs_results = fs::absolute(results_dir).lexically_normal().string();
  std::unique_ptr<pipeline::Index> index;
  std::optional<pipeline::Settled> settled;
  std::string previous_steps;  // the steps file of the record found, to replace
  bool may_settle = !f.dry_run && !f.worker;
  if (may_settle) {
    std::string cache_dir = f.cache.empty() ? bdir + "/cache" : fs::absolute(f.cache).string();
    std::string ix = cache_dir + "/index.sqlite";
    if (files::exists(ix)) {
      if (auto opened = pipeline::Index::open(ix); opened.ok()) index = std::move(*opened);
    }
    if (index && index->rebuilt_reason().empty()) {
      if (auto blob = index->settled(settled_name)) {
        auto s = pipeline::decode_settled(*blob);
        if (s.ok()) {
          previous_steps = pipeline::settled_steps_path(cache_dir, s->steps_object);
          std::string context =
              pipeline::settled_context(engine, cwd, settled_name, *text, url, abs_results);
          if (s->context == context) settled = std::move(*s);
        }
      }
    }
  }
  std::optional<pipeline::Graph> graph;
  auto load_graph = [&]() -> std::optional<int> {
    auto file = pipeline::parse_pipeline(*text, f.pipeline);
    if (!file.ok()) return report(file.error());
    auto g = pipeline::expand(*file, [](const std::string& p) { return files::exists(p); });
    if (!g.ok()) return report(g.error());
    graph = std::move(*g);
    return std::nullopt;
  };
  if (!settled) {
    if (auto rc = load_graph()) return *rc;
  }

  // 2. Worker mode is refused before anything runs when it could not divide anything.
  std::string worker;
  std::chrono::milliseconds lease{0};
  if (f.worker) {
    if (f.worker->empty()) {
      worker = pipeline::generate_worker_name(Clock::real(), getpid());
    } else {
      auto name = pipeline::check_worker_name(*f.worker);
      if (!name.ok()) return report(name.error().with_context("--worker"));
      worker = *name;
    }
    if (f.store.empty()) {
      return report(Error(Errc::kInvalidInput,
                          "--worker needs a shared store: give --store URL (a file:// directory "
                          "every worker can reach, or s3://bucket/prefix); a worker without one "
                          "has nobody to divide the work with and would compute the whole "
                          "pipeline alone"));
    }
    auto d = pipeline::parse_duration(f.lease, "--lease");
    if (!d.ok()) return report(d.error());
    lease = *d;
  }

  // 3. What berth was given, and the pool over it.
  auto ctx = build_context(f.alloc, f.machine);
  if (!ctx.ok()) return report(ctx.error());
  std::vector<place::PoolNode> nodes = ctx->pool_nodes();
  if (f.worker) {
    // A worker places steps on its own node only: the other nodes have workers of
    // their own (srun -N 4 berth run ... --worker starts one on each).
    std::string here;
    for (const auto* n : ctx->allocation.up_nodes()) {
      if (n->local) here = n->name;
    }
    if (!here.empty()) {
      std::erase_if(nodes, [&](const place::PoolNode& n) { return n.name != here; });
    }
  }
  const std::string host = ctx->here();
  // Every node a step may be placed on can be reached from here, or nothing runs: a
  // step must never run on this node under another's name (spec 02 §7).
  {
    std::vector<std::string> names;
    for (const auto& n : nodes) names.push_back(n.name);
    if (auto reach = ctx->check_reachable(names); !reach.ok()) return report(reach.error());
  }
  place::Pool pool(nodes);

  // 4. The cache directory: this machine's index, staging area and (for a worker) its
  // local object tier. One per worker by default: never one SQLite file shared over a
  // network filesystem. An explicit --cache for a worker is guarded by a lock file.
  std::string cache = !f.cache.empty() ? fs::absolute(f.cache).string()
                      : f.worker      ? bdir + "/cache/workers/" + worker
                                      : bdir + "/cache";
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) return report(Error(Errc::kIo, fmt::format("cannot create {}: {}", cache, ec.message())));
  std::optional<pipeline::CacheLock> lock;
  if (f.worker && !f.cache.empty()) {
    auto l = pipeline::CacheLock::acquire(cache, worker, host, Clock::real());
    if (!l.ok()) return report(l.error().with_context("--cache"));
    lock.emplace(std::move(*l));
  }

  // 5. The store: a worker reads and writes objects through a local tier, and always
  // asks the shared store about rows and leases.
  auto opened = open_store_url(url);
  if (!opened.ok()) return report(opened.error().with_context("--store"));
  std::unique_ptr<store::ObjectStore> store = std::move(*opened);
  store::ObjectStore* shared = store.get();
  if (f.worker) {
    auto local = store::FileStore::open(cache + "/objects");
    if (!local.ok()) return report(local.error().with_context("the worker's local tier"));
    auto tiered = std::make_unique<store::TieredStore>(std::move(*local), std::move(store));
    shared = &tiered->shared();
    store = std::move(tiered);
  }
  for (const auto& n : store->notices()) std::fprintf(stderr, "berth: %s\n", n.c_str());

  pipeline::RunOptions o;
  o.results_dir = results_dir;
  o.staging_dir = cache + "/staging";
  o.dry_run = f.dry_run;
  o.fail_fast = f.fail_fast;
  o.engine_version = engine;
  o.platform = platform();
  o.host = host;
  o.machine = ctx->machine;
  o.launcher = &ctx->launcher;
  o.shared = shared;
  o.worker = worker;
  std::string report_path = (f.worker || !f.cache.empty() ? cache : bdir) + "/last-run.json";
  o.load_previous = [report_path] { return previous_bases(report_path); };
  auto previous_text = std::make_shared<std::optional<std::string>>();
  o.find_previous = [report_path, previous_text](const std::string& step) {
    if (!*previous_text) {
      auto t = files::read_file(report_path);
      *previous_text = t.ok() ? std::move(*t) : std::string();
    }
    return pipeline::find_step_basis(**previous_text, step);
  };
  std::unique_ptr<pipeline::Leases> leases;
  if (f.worker) {
    leases = std::make_unique<pipeline::Leases>(*shared, worker, pipeline::Leases::new_token(),
                                                Clock::real(), lease);
    o.leases = leases.get();
  }
  bool tty = isatty(2) && f.format == "text";
  if (tty) o.progress = progress_line();
  fs::create_directories(o.staging_dir, ec);
  // This machine's index of what it knows; disposable, rebuilt from the store.
  if (!index) {
    if (auto ix = pipeline::Index::open(cache + "/index.sqlite"); ix.ok()) {
      index = std::move(*ix);
    } else {
      std::fprintf(stderr, "berth: running without the local index: %s\n",
                   ix.error().message().c_str());
    }
  }
  if (index) {
    if (!index->rebuilt_reason().empty()) {
      std::fprintf(stderr, "berth: the local index was rebuilt: %s\n",
                   index->rebuilt_reason().c_str());
    }
    o.index = index.get();
  }

  // 6. A settled pipeline whose record still holds is that run again: reported, not
  // re-derived (settled.h). Otherwise the ordinary run, which records afresh.
  if (settled) {
    auto t0 = std::chrono::steady_clock::now();
    std::string started = pipeline::iso_now();
    if (auto rc = run_settled(f, *settled, previous_steps, started, t0, pool, *store, *shared,
                              report_path)) {
      return *rc;
    }
    settled.reset();
    if (auto rc = load_graph()) return *rc;
  }
  o.record_settled = may_settle && o.index;

  // 7. Run, with Ctrl-C ending running steps cleanly.
  Interrupts interrupts;
  o.cancel_fd = interrupts.cancel_fd();
  auto rep = pipeline::run_graph(*graph, *store, pool, Env::from_process(), o);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!rep.ok()) return report(rep.error());

  // 8. The report: stored with the run, kept beside the pipeline, printed. A run that
  // settled leaves its record for the next.
  std::string steps_json = pipeline::report_steps_json(*rep);
  std::string j = pipeline::report_json(*rep, steps_json);
  std::string steps_object;
  if (!f.dry_run) steps_object = publish_report(*rep, steps_json, j, *shared, report_path);
  if (o.record_settled) {
    // The record, and beside it the steps a rerun reports (an object of their own when
    // steps executed: this run reports them executed); or no record.
    bool kept = false;
    std::string steps_path;
    if (rep->settled && !steps_object.empty()) {
      std::string rerun_steps;
      if (rep->count(pipeline::StepState::kExecuted) > 0) {
        rerun_steps = pipeline::settled_steps_json(*rep);
        auto name = shared->put_object(rerun_steps);
        steps_object = name.ok() ? *name : "";
      }
      const std::string& steps = rerun_steps.empty() ? steps_json : rerun_steps;
      steps_path = pipeline::settled_steps_path(cache, steps_object);
      std::error_code mk;
      if (!steps_path.empty()) fs::create_directories(fs::path(steps_path).parent_path(), mk);
      if (!steps_path.empty() && !mk && files::write_file_atomic(steps_path, steps).ok()) {
        rep->settled->steps_object = steps_object;
        rep->settled->steps_bytes = steps.size();
        rep->settled->context =
            pipeline::settled_context(engine, cwd, settled_name, *text, url, abs_results);
        index->remember_settled(settled_name, pipeline::encode_settled(*rep->settled));
        kept = true;
      }
    }
    if (!kept) index->forget_settled(settled_name);
    if (!previous_steps.empty() && (!kept || previous_steps != steps_path)) {
      ::unlink(previous_steps.c_str());
    }
  }
  // What a launcher did not do that steps asked for, once per run where it is seen.
  for (const auto& n : rep->launch_notices) std::fprintf(stderr, "berth: %s\n", n.c_str());
  if (f.format == "json") {
    std::fwrite(j.data(), 1, j.size(), stdout);
  } else {
    for (const auto& s : rep->steps) {
      if (f.dry_run || s.state == pipeline::StepState::kFailed ||
          s.state == pipeline::StepState::kRefused || s.state == pipeline::StepState::kSkipped) {
        bool would = f.dry_run && s.reason.rfind("would run", 0) == 0;
        std::printf("%-9s %s%s%s\n", would ? "would-run" : pipeline::step_state_name(s.state),
                    s.name.c_str(),
                    s.reason.empty() ? "" : ": ", s.reason.c_str());
      }
    }
    for (const auto& p : rep->problems) std::printf("problem: %s\n", p.c_str());
    for (const auto& d : rep->divergences) {
      std::printf("divergence: %s output %s: ours %s, theirs %s\n", d.step.c_str(),
                  d.output.c_str(), d.ours.c_str(), d.theirs.c_str());
    }
    if (f.worker) {
      std::printf("worker %s: %d lease(s) acquired, %d deferral(s), %d re-arm(s), %d released, "
                  "%d lock-free\n",
                  worker.c_str(), rep->leases.acquired, rep->leases.held, rep->leases.rearms,
                  rep->leases.released, rep->leases.lock_free);
    }
    std::printf("%s\n", summary_line(*rep).c_str());
  }
  std::fflush(stdout);
  if (interrupts.signal()) return 128 + interrupts.signal();
  return rep->exit_code();
}

// --- berth report / methods: the last run, read back.

Result<nlohmann::json> last_run(const std::string& pipeline) {
  std::string path = berth_dir_for(pipeline) + "/last-run.json";
  BERTH_TRY(std::string text, files::read_file(path));
  if (str::json_deeper_than(text, pipeline::kMaxReportDepth)) {
    return fail(Errc::kInvalidInput, fmt::format("{}: not a run report (nested more than {} "
                                                 "levels deep)",
                                                 path, pipeline::kMaxReportDepth));
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail(Errc::kInvalidInput, path + ": not a run report");
  return j;
}

struct ReportFlags {
  std::string pipeline = "pipeline.toml";
  std::string html;
  std::string format = "text";
};

int run_report(const ReportFlags& f) {
  auto j = last_run(f.pipeline);
  if (!j.ok()) return report(j.error().with_context("berth report"));
  if (!f.html.empty()) {
    pipeline::RunReport r;
    r.pipeline = j->value("pipeline", "");
    r.elapsed_s = j->value("elapsed_s", 0.0);
    for (const auto& s : (*j)["steps"]) {
      pipeline::StepRecord rec;
      rec.name = s.value("name", "");
      std::string st = s.value("state", "");
      for (auto k : {pipeline::StepState::kCached, pipeline::StepState::kExecuted,
                     pipeline::StepState::kFailed, pipeline::StepState::kSkipped,
                     pipeline::StepState::kRefused, pipeline::StepState::kCancelled}) {
        if (st == pipeline::step_state_name(k)) rec.state = k;
      }
      rec.node = s.value("node", "");
      rec.cores = s.value("cores", "");
      rec.start_s = s.value("start_s", 0.0);
      rec.end_s = s.value("end_s", 0.0);
      rec.reason = s.value("reason", "");
      rec.computed_by = s.value("computed_by", "");
      r.steps.push_back(rec);
    }
    auto w = files::write_file_atomic(f.html, pipeline::report_html(r));
    if (!w.ok()) return report(w.error());
  }
  std::string out = f.format == "json" ? j->dump(2) + "\n"
                                       : fmt::format("{}: {} executed, {} cached, {} failed, {} "
                                                     "skipped, {} refused, {:.2f} s\n",
                                                     j->value("pipeline", ""),
                                                     j->value("executed", 0), j->value("cached", 0),
                                                     j->value("failed", 0), j->value("skipped", 0),
                                                     j->value("refused", 0),
                                                     j->value("elapsed_s", 0.0));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

struct MethodsFlags {
  std::string pipeline = "pipeline.toml";
  std::string store;
};

int run_methods(const MethodsFlags& f) {
  auto j = last_run(f.pipeline);
  if (!j.ok()) return report(j.error().with_context("berth methods"));
  std::string url = f.store.empty() ? "file://" + berth_dir_for(f.pipeline) + "/store" : f.store;
  auto store = open_store_url(url);
  if (!store.ok()) return report(store.error());
  std::vector<std::string> rows;
  for (const auto& s : (*j)["steps"]) {
    std::string key = s.value("key", "");
    if (key.empty()) continue;
    auto row = (*store)->get_row(store::row_address("steps", key));
    if (row.ok() && row->has_value()) rows.push_back(**row);
  }
  std::string text = pipeline::methods_paragraph(j->value("pipeline", ""), rows);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

// --- berth store: inspect the store by hand.

struct StoreFlags {
  std::string url = "file://.berth/store";
  std::vector<std::string> args;
  std::string out;
};

int run_store(const std::string& verb, const StoreFlags& f) {
  auto store = open_store_url(f.url);
  if (!store.ok()) return report(store.error().with_context("--store"));
  if (f.args.empty() && verb != "verify") {
    return report(Error(Errc::kInvalidInput, fmt::format("berth store {}: name what to {}", verb, verb)));
  }
  if (verb == "put") {
    for (const auto& p : f.args) {
      auto name = (*store)->put_object_file(p);
      if (!name.ok()) return report(name.error());
      std::printf("%s  %s\n", name->c_str(), p.c_str());
    }
    return kExitOk;
  }
  if (verb == "get") {
    auto got = f.out.empty() ? (*store)->get_object(f.args[0])
                             : (*store)->get_object_to_file(f.args[0], f.out);
    if (!got.ok()) return report(got.error());
    if (!got->present()) {
      return report(Error(Errc::kNotFound, got->problem.empty()
                                               ? f.args[0] + ": not in the store"
                                               : got->problem));
    }
    if (f.out.empty()) std::fwrite(got->bytes.data(), 1, got->bytes.size(), stdout);
    return kExitOk;
  }
  if (verb == "cat") {
    auto row = (*store)->get_row(f.args[0]);
    if (!row.ok()) return report(row.error());
    if (!row->has_value()) return report(Error(Errc::kNotFound, f.args[0] + ": no such row"));
    std::printf("%s\n", (*row)->c_str());
    return kExitOk;
  }
  // verify: every named object, or every object a step row names.
  std::vector<std::string> names = f.args;
  if (names.empty()) {
    auto rows = (*store)->list_rows(store::row_address("steps", "").substr(
        0, store::row_address("steps", "").size()));
    if (rows.ok()) {
      for (const auto& a : *rows) {
        auto row = (*store)->get_row(a);
        if (!row.ok() || !row->has_value()) continue;
        auto j = nlohmann::json::parse(**row, nullptr, false);
        if (j.is_discarded() || !j.contains("outputs")) continue;
        for (auto& [k, v] : j["outputs"].items()) names.push_back(v.value("object", ""));
      }
    }
  }
  int bad = 0;
  for (const auto& n : names) {
    auto got = (*store)->get_object(n);
    bool ok = got.ok() && got->present();
    if (!ok) ++bad;
    std::printf("%s  %s\n", ok ? "ok     " : "corrupt", n.c_str());
  }
  std::printf("%zu object(s) verified, %d bad\n", names.size(), bad);
  return bad ? kExitFailure : kExitOk;
}

}  // namespace

std::function<int()> setup_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->required();
  app.add_option("--store", f->store, "Store URL (default file://<dir>/.berth/store)");
  app.add_option("--results", f->results, "Results directory (default <dir>/results)");
  app.add_option("--cache", f->cache,
                 "Cache directory: index, staging (default <dir>/.berth/cache, and "
                 "<dir>/.berth/cache/workers/NAME for a worker)");
  f->worker_opt = app.add_option("--worker", f->worker_text,
                 "Run as one of any number of workers dividing the pipeline through leases "
                 "in the shared --store; NAME is generated when not given")
      ->expected(0, 1);
  app.add_option("--lease", f->lease, "How long a worker's claim on a step holds")
      ->capture_default_str();
  app.add_flag("--dry-run", f->dry_run, "Say what would run and why; run nothing");
  app.add_flag("--fail-fast", f->fail_fast, "Stop starting steps after the first failure");
  app.add_flag("--keep-going", f->keep_going, "Run every independent step (the default)");
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

std::function<int()> setup_report(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->capture_default_str();
  app.add_option("--html", f->html, "Write an HTML report with a timeline to FILE");
  app.add_option("--format", f->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [f] { return run_report(*f); };
}

std::function<int()> setup_methods(CLI::App& app) {
  auto f = std::make_shared<MethodsFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->capture_default_str();
  app.add_option("--store", f->store, "Store URL");
  return [f] { return run_methods(*f); };
}

std::function<int()> setup_store(CLI::App& app) {
  auto f = std::make_shared<StoreFlags>();
  app.require_subcommand(1);
  auto chosen = std::make_shared<std::string>();
  for (const char* verb : {"put", "get", "verify", "cat"}) {
    CLI::App* sub = app.add_subcommand(verb, std::string("store ") + verb);
    sub->add_option("--store", f->url, "Store URL")->capture_default_str();
    sub->add_option("args", f->args, "Files (put), object names (get, verify), a row (cat)");
    if (std::string(verb) == "get") sub->add_option("-o,--out", f->out, "Write to FILE");
    sub->callback([chosen, verb] { *chosen = verb; });
  }
  return [f, chosen] { return run_store(*chosen, *f); };
}

}  // namespace berth::cli
