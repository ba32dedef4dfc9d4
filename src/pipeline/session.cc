// Session (session.h): one run of a pipeline, opened and run.
#include "pipeline/session.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <unordered_set>

#include "pipeline/discover.h"
#include "pipeline/dry_run.h"
#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/launch_runner.h"
#include "pipeline/lease.h"
#include "pipeline/pipeline_file.h"
#include "pipeline/previous_basis.h"
#include "pipeline/probe.h"
#include "pipeline/publish.h"
#include "pipeline/record_graph.h"
#include "pipeline/results_manifest.h"
#include "pipeline/settled.h"
#include "pipeline/store_waits.h"
#include "pipeline/targets.h"
#include "pipeline/worker.h"
#include "store/file_store.h"
#include "store/patient_store.h"
#include "store/tiered_store.h"
#include "store/url.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {

namespace fs = std::filesystem;

namespace {

std::string platform() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return fmt::format("{} {} {}", u.sysname, u.release, u.machine);
}

}  // namespace

struct Session::State {
  SessionOptions o;
  SessionPlace place;
  const Env& env;
  SessionSinks sinks;
  std::string text;          // the pipeline file's bytes
  // How many [[step]] tables it was read as, one by one (0: read whole), and by table,
  // which of them are the settled record's bytes (load_graph()).
  size_t tables = 0;
  std::vector<char> same_tables;
  std::vector<uint32_t> globbed;  // the tables that find foreach values among files
  // The graph was made from the edited tables alone (load_tables()): its other steps
  // are known by their entries in the record, which must all be reused.
  bool from_tables = false;
  size_t tables_again = 0;  // how many tables it read
  // The record's entries decoded, and their text (recorded_steps()), once asked for.
  bool entries_decoded = false;
  std::shared_ptr<const RecordedEntries> recorded;
  std::string bdir;          // <dir>/.berth
  std::string settled_name;  // the pipeline's absolute path: the settled record's name
  std::string url;           // the store
  std::string results_dir, abs_results;
  std::string cwd;
  std::string cache;        // the cache directory
  std::string report_path;  // last-run.json
  std::unique_ptr<Index> index;
  // The settled record found: of this very context (`same`: the pipeline's bytes
  // too), or of the same base, left by another version of the pipeline file.
  std::optional<Settled> settled;
  bool same = false;
  std::string previous_steps;   // the steps file of the record found, to replace
  std::string previous_record;  // and the record's own file
  files::SharedBytes record_bytes;  // its bytes, whose step lines begin at entries_at
  size_t entries_at = 0;
  // The bytes of the record's steps object, once recorded_steps() has mapped them: the
  // next record's overrides are made against them (publish_run(), publish.h).
  files::SharedBytes previous_object;
  // What of the record still holds, and when the check began (racy inputs, index.h).
  std::optional<SettledCheck> check;
  int64_t check_ns = 0;
  bool may_settle = false;
  // The pipeline file's parsed TOML, when the process exits after the session: left to
  // the operating system with the graph rather than freed (load_graph()).
  std::shared_ptr<const void> document;
  std::optional<Graph> graph;
  Discovered discovered;  // the directories foreach globs read (discover.h)
  std::string worker;
  std::chrono::milliseconds lease{0};
  std::optional<place::Pool> pool;
  std::optional<CacheLock> lock;
  std::unique_ptr<store::ObjectStore> own_store;  // the store opened from `url`
  store::ObjectStore* store = nullptr;   // the run's: own_store, or the one handed in
  store::ObjectStore* shared = nullptr;
  store::PatientStore* patient = nullptr;  // the shared store, waiting out its outages
  std::unique_ptr<Leases> leases;

  State(SessionOptions opts, SessionPlace pl, const Env& e, SessionSinks s)
      : o(std::move(opts)), place(std::move(pl)), env(e), sinks(std::move(s)) {}
  void say(const std::string& m) const { if (sinks.say) sinks.say(m); }
  const Clock& clock() const { return o.clock != nullptr ? *o.clock : Clock::real(); }
  std::string context() const {
    return settled_context(o.engine_version, cwd, settled_name, text, url, abs_results);
  }
  std::string base() const {
    return settled_base(o.engine_version, cwd, settled_name, url, abs_results);
  }
  // Session::run's parts: after a record that does not hold as a whole, the graph and
  // what of the record the run may reuse; the run's options.
  Result<std::optional<SettledReuse>> reuse_from_record();
  RunOptions run_options(int cancel_fd, std::optional<SettledReuse> reuse);
  // Session::open's steps (session.h): the file read, its paths made; the settled record
  // this context (or its base) left, if any; worker mode checked and named; the pool; the
  // cache directory; the store (opened from the URL: open_patient_store()); the index.
  Result<void> read_pipeline();
  void find_record();
  Result<void> worker_mode();
  Result<void> make_pool();
  Result<void> make_cache();
  Result<void> open_store();
  Result<void> open_patient_store();
  void open_index();
  Result<void> load_graph();
  // The graph of an edited file from the settled record and the tables whose bytes
  // changed, parsed alone; false when that cannot be (load_graph() then reads it all).
  // With `fresh` (the same bytes as the record's, some facts changed): the steps whose
  // entries are marked are made afresh from their tables, every other from its entry.
  bool load_tables(const std::vector<char>* fresh = nullptr);
  // The steps of a run of the record's own bytes that cannot be reused: those whose facts
  // changed and every step reading from one; false when not doable table by table.
  bool load_fresh();
  // Whether every step of a graph load_tables() made that it did not parse still rests
  // on facts that hold (and every request still fits, every tool answers the same):
  // else it could not be reused, and the file is read whole.
  bool tables_hold() const;
  // The record's entries, decoded once; false when they do not decode.
  bool decode_entries();
  place::VersionProbe& probe(std::optional<CaptureProbe>& own) {
    if (place.probe != nullptr) return *place.probe;
    own.emplace(env);
    return *own;
  }
  // The entries a rerun of the settled record reports (in its steps object, or its
  // overrides), for an ordinary run to reuse; null when the object's file is missing or
  // not the record's length. Keeps the object's bytes in `previous_object`.
  std::shared_ptr<const RecordedEntries> recorded_steps();
  // The real step runner (launch_runner.h), its staging area made in `staging`.
  std::unique_ptr<StepRunner> launch_runner(std::optional<Staging>& staging, int cancel_fd) {
    staging.emplace(cache + "/staging");
    staging->sweep_stale();
    LaunchRunnerOptions lo;
    lo.host = place.host;
    lo.machine = place.machine;
    lo.launcher = place.launcher;
    lo.engine_version = o.engine_version;
    lo.platform = platform();
    lo.worker = worker;
    lo.cancel_fd = cancel_fd;
    lo.clock = o.clock;
    if (o.keep_failed) lo.keep_failed = fs::path(report_path).parent_path().string() + "/failed";
    lo.output = sinks.step_output;
    lo.live = o.live;
    lo.agents = place.agents;
    return std::make_unique<LaunchStepRunner>(*graph, *staging, env, std::move(lo));
  }
  // The record found, and where this run publishes (publish.h).
  PreviousRecord previous() {
    return {settled ? &*settled : nullptr, previous_object, previous_steps, previous_record,
            record_bytes, entries_at};
  }
  PublishPlace publish_place() const {
    PublishPlace p;
    p.store = store;
    p.shared = shared;
    p.index = index.get();
    p.cache = cache;
    p.report_path = report_path;
    p.settled_name = settled_name;
    p.host = place.host;
    p.targets = o.targets;
    p.context = [this] { return context(); };
    p.base = [this] { return base(); };
    p.tables = tables;
    p.globbed = globbed;
    p.check = check ? &*check : nullptr;
    p.check_ns = check_ns;
    p.say = sinks.say;
    return p;
  }
};

Session::Session(std::unique_ptr<State> s) : s_(std::move(s)) {}

namespace {
// What a session of a process about to end leaves to the operating system: reachable
// from here, so that leak checkers do not count it.
struct LeftAtExit {
  std::shared_ptr<const void> document;  // the pipeline file's parsed TOML
  std::optional<Graph> graph;
  std::optional<Settled> settled;
  std::optional<SettledCheck> check;
};
std::vector<std::unique_ptr<LeftAtExit>>* left_at_exit = nullptr;
}  // namespace

Session::~Session() {
  if (!s_ || !s_->o.process_exits) return;
  if (left_at_exit == nullptr) left_at_exit = new std::vector<std::unique_ptr<LeftAtExit>>;
  left_at_exit->push_back(std::make_unique<LeftAtExit>(
      LeftAtExit{std::move(s_->document), std::move(s_->graph), std::move(s_->settled),
                 std::move(s_->check)}));
}

// How far ahead of the last path found load_graph() looks among the record's files (a
// step's inputs lie among its results), and how many paths it may fail to find there
// before it makes a table of them all.
constexpr size_t kNearby = 4;
constexpr size_t kAstrayBeforeTable = 64;

// A parsed file of more bytes than this is freed once read, even by a process about to
// exit: its tree (a node per value, 10^6 of them for one foreach key) would stay
// through the run, most of what a dry run of 10^6 steps peaks at, to save milliseconds
// at exit.
constexpr size_t kKeepDocumentBelow = 1 << 20;

Result<void> Session::State::load_graph() {
  // Kept only to be left to the operating system with the rest (process_exits).
  std::shared_ptr<const void> kept;
  BERTH_TRY(PipelineFile file, parse_pipeline(text, o.pipeline, kept, o.config));
  if (o.process_exits && text.size() < kKeepDocumentBelow) document = std::move(kept);
  kept.reset();
  tables = file.tables.size();
  if (settled && !same) same_tables = tables_as_recorded(text, same, *settled, file);
  globbed.clear();
  for (const StepSpec& spec : file.steps) {
    if (spec.finds_values_in_files()) globbed.push_back(static_cast<uint32_t>(spec.index));
  }
  BERTH_TRY(discovered, discover_foreach(file, DiscoveryFs::real()));
  // A file the settled record's check just found with its stamp exists: not stat'ed
  // again (a 10,000-step pipeline names 10,000 inputs). Expansion asks in the steps'
  // order, which is mostly the record's: each path is looked for among the record's
  // next few files first, and a table of them all is made only once that keeps failing
  // (10,000 lookups in a table of 20,000 paths cost 3 ms, a cache miss or more each).
  size_t known = settled && check ? std::min(settled->files.size(), check->file_ok.size()) : 0;
  size_t next = 0, astray = 0;
  std::unordered_set<std::string_view> present;
  auto exists = [&](const std::string& p) {
    for (size_t i = next; i < known && i < next + kNearby; ++i) {
      if (settled->files[i].path != p) continue;
      if (!check->file_ok[i]) break;
      next = i + 1;
      return true;
    }
    if (++astray == kAstrayBeforeTable) {
      present.reserve(known);
      for (size_t i = 0; i < known; ++i) {
        if (check->file_ok[i]) present.insert(settled->files[i].path);
      }
    }
    return present.count(p) > 0 || files::exists(p);
  };
  BERTH_TRY(Graph g, expand(std::move(file), exists));
  BERTH_TRY(graph, select_targets(std::move(g), o.targets));
  return Ok{};
}

bool Session::State::decode_entries() {
  if (!entries_decoded) {
    entries_decoded = decode_settled_entries(*record_bytes, entries_at, *settled).ok();
  }
  return entries_decoded;
}

bool Session::State::load_tables(const std::vector<char>* fresh) {
  if (!settled || !may_settle) return false;
  RecordGraphInput in;
  in.text = text;
  in.path = o.pipeline;
  in.record = &*settled;
  in.same = same;
  in.fresh = fresh;
  in.recorded = [this]() -> const RecordedEntries* {
    if (!decode_entries()) return nullptr;
    if (!recorded) recorded = recorded_steps();
    return recorded.get();
  };
  auto made = graph_from_record(in, DiscoveryFs::real(), files::exists);
  if (!made) return false;
  graph = std::move(made->graph);
  from_tables = true;
  tables_again = made->tables_read;
  tables = made->tables;
  globbed = std::move(made->globbed);
  discovered = std::move(made->discovered);
  same_tables = std::move(made->same_tables);
  if (o.process_exits) document = std::move(made->document);
  return true;
}

bool Session::State::load_fresh() {
  // Every request still fitting: a step taken from its entry is not checked against the
  // pool, which reading the whole file would refuse the run for.
  if (!same || !check || !check->tools_same || !check->requests_fit || !decode_entries()) {
    return false;
  }
  std::vector<char> fresh = entries_made_afresh(*settled, *check);
  return load_tables(&fresh);
}

bool Session::State::tables_hold() const {
  return recorded && check && check->tools_same && check->requests_fit &&
         record_steps_hold(*graph, *settled, *check);
}

Result<std::unique_ptr<Session>> Session::open(SessionOptions options, SessionPlace place,
                                               const Env& env, SessionSinks sinks) {
  auto st = std::make_unique<State>(std::move(options), std::move(place), env, std::move(sinks));
  State& s = *st;
  // 1. The pipeline file, expanded and checked before anything runs; unless the last
  // run of these very bytes settled, when parsing waits until the record turns out not
  // to hold. An edit of a few tables of a settled pipeline: those tables alone.
  BERTH_CHECK(s.read_pipeline());
  if (s.may_settle) s.find_record();
  if (!s.same && !s.load_tables()) BERTH_CHECK(s.load_graph());
  // 2. Worker mode is refused before anything runs when it could not divide anything.
  if (s.o.worker) BERTH_CHECK(s.worker_mode());
  // 3.-5. The pool, the cache directory, the store.
  BERTH_CHECK(s.make_pool());
  BERTH_CHECK(s.make_cache());
  BERTH_CHECK(s.open_store());
  s.open_index();
  BERTH_CHECK(claim_results_dir(s.results_dir, s.settled_name, !s.o.dry_run));  // spec 04 §7.5
  return std::unique_ptr<Session>(new Session(std::move(st)));
}

Result<void> Session::State::read_pipeline() {
  BERTH_TRY(text, files::read_file(o.pipeline));
  bdir = berth_dir_for(o.pipeline);
  settled_name = fs::absolute(o.pipeline).lexically_normal().string();
  url = o.store.empty() ? "file://" + bdir + "/store" : o.store;
  results_dir = o.results.empty() ? default_results_dir(o.pipeline) : o.results;
  cwd = fs::current_path().string();
  abs_results = fs::absolute(results_dir).lexically_normal().string();
  may_settle = !o.dry_run && !o.worker && o.targets.empty() && o.config.empty();
  return Ok{};
}

void Session::State::find_record() {
  std::string cache_dir = o.cache.empty() ? bdir + "/cache" : fs::absolute(o.cache).string();
  std::string ix = cache_dir + "/index.sqlite";
  if (files::exists(ix)) {
    if (auto opened = Index::open(ix); opened.ok()) index = std::move(*opened);
  }
  if (!index || !index->rebuilt_reason().empty()) return;
  // The index names the record's file; a file of another length, or one that does not
  // decode, is no record.
  auto where = index->settled(settled_name);
  auto ptr = where ? read_settled_pointer(*where) : std::nullopt;
  if (!ptr) return;
  // Mapped, not read (megabytes for 10^4 steps): records are replaced whole.
  auto bytes = files::map_file(ptr->first, ptr->second);
  if (!bytes.ok()) return;
  previous_record = ptr->first;
  // Its steps' entries are read only if the record does not hold as a whole.
  auto rec = decode_settled(**bytes, false, &entries_at);
  if (!rec.ok()) return;
  record_bytes = std::move(*bytes);
  previous_steps = settled_steps_path(cache_dir, rec->steps_object);
  if (rec->context == context()) {
    settled = std::move(*rec);
    same = true;
  } else if (rec->base == base()) {
    settled = std::move(*rec);  // another version of the file: reuse by fingerprint
  }
}

Result<void> Session::State::worker_mode() {
  if (o.worker->empty()) {
    worker = generate_worker_name(clock(), getpid());
  } else {
    auto name = check_worker_name(*o.worker);
    if (!name.ok()) return name.error().with_context("--worker");
    worker = *name;
  }
  if (o.store.empty()) {
    return fail(Errc::kInvalidInput,
                "--worker needs a shared store: give --store URL (a file:// directory every "
                "worker can reach, or s3://bucket/prefix); a worker without one has nobody to "
                "divide the work with and would compute the whole pipeline alone");
  }
  BERTH_TRY(lease, parse_duration(o.lease, "--lease"));
  return Ok{};
}

Result<void> Session::State::make_pool() {
  // A worker places steps on its own node only: the other nodes have workers of their
  // own (srun -N 4 berth run ... --worker starts one on each). Every node a step may be
  // placed on can be reached from here, or nothing runs: a step must never run on this
  // node under another's name (spec 02 §7).
  std::vector<place::PoolNode> nodes = place.nodes;
  if (o.worker && !place.host.empty()) {
    std::erase_if(nodes, [&](const place::PoolNode& n) { return n.name != place.host; });
  }
  for (const auto& n : nodes) {
    bool agent = place.for_steps || (place.agents != nullptr && place.agents->serves(n.name));
    std::string why = place.launcher == nullptr || agent
                          ? "" : place::unreachable(*place.launcher, n.name, place.host);
    if (!why.empty()) return fail(Errc::kRefused, why);
  }
  pool.emplace(nodes);
  return Ok{};
}

Result<void> Session::State::make_cache() {
  // This machine's index, staging area and (for a worker) its local object tier. One
  // per worker by default: never one SQLite file shared over a network filesystem. An
  // explicit --cache for a worker is guarded by a lock file.
  cache = !o.cache.empty() ? fs::absolute(o.cache).string()
          : o.worker       ? bdir + "/cache/workers/" + worker
                           : bdir + "/cache";
  report_path =
      pipeline_dir_for(o.pipeline, o.worker || !o.cache.empty() ? cache : "") + "/last-run.json";
  if (o.dry_run && !files::exists(cache)) return Ok{};  // a dry run creates nothing
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot create {}: {}", cache, ec.message()));
  if (o.worker && !o.cache.empty()) {
    auto l = CacheLock::acquire(cache, worker, place.host, clock());
    if (!l.ok()) return l.error().with_context("--cache");
    lock.emplace(std::move(*l));
  }
  fs::create_directories(cache + "/staging", ec);
  return Ok{};
}

Result<void> Session::State::open_store() {
  if (o.dry_run && place.store == nullptr) own_store = dry_run_store(url, cwd);  // makes none
  if (own_store) place.store = own_store.get();
  if (place.store != nullptr) {
    store = shared = place.store;
  } else {
    BERTH_CHECK(open_patient_store());
  }
  for (const auto& n : store->notices()) say(n);
  if (o.worker) {
    leases = std::make_unique<Leases>(*shared, worker, Leases::new_token(), clock(), lease);
  }
  return Ok{};
}

Result<void> Session::State::open_patient_store() {
  // A worker reads and writes objects through a local tier, and always asks the shared
  // store about rows and leases.
  auto parsed = store::parse_store_url(url, cwd);
  if (!parsed.ok()) return parsed.error().with_context("--store");
  auto opened = store::open_store(*parsed, env);
  if (!opened.ok()) return opened.error().with_context("--store");
  // Every operation on the shared store waits out an outage of up to --store-patience
  // (spec 05 §9): an object store or parallel filesystem pausing is ordinary.
  store::Patience patience;
  BERTH_TRY(patience.patience, parse_duration(o.store_patience, "--store-patience"));
  patience.on_wait = [this](const std::string& name, const Error& e) {
    say(fmt::format("the store {} is not answering ({}); waiting up to {} for it "
                    "(--store-patience)",
                    name, e.message(), o.store_patience));
  };
  patience.on_back = [this](const std::string& name, std::chrono::milliseconds away) {
    say(fmt::format("the store {} answered again after {:.1f} s", name,
                    static_cast<double>(away.count()) / 1000.0));
  };
  auto made = std::make_unique<store::PatientStore>(std::move(*opened), std::move(patience),
                                                    clock());
  patient = made.get();
  shared = made.get();
  own_store = std::move(made);
  if (o.worker) {
    auto local = store::FileStore::open(cache + "/objects");
    if (!local.ok()) return local.error().with_context("the worker's local tier");
    auto tiered = std::make_unique<store::TieredStore>(std::move(*local), std::move(own_store));
    shared = &tiered->shared();
    own_store = std::move(tiered);
  }
  store = own_store.get();
  return Ok{};
}

void Session::State::open_index() {
  // This machine's index of what it knows; disposable, rebuilt from the store.
  if (o.dry_run && !files::exists(cache)) return;  // none made for a dry run
  bool fresh_index = false;
  if (!index) {
    fresh_index = !files::exists(cache + "/index.sqlite");
    if (auto ix = Index::open(cache + "/index.sqlite"); ix.ok()) {
      index = std::move(*ix);
    } else {
      say("running without the local index: " + ix.error().message());
    }
  }
  if (index && !index->rebuilt_reason().empty()) {
    say("the local index was rebuilt: " + index->rebuilt_reason());
    fresh_index = true;
  }
  // A new or rebuilt index names no settled record: the files of any left beside it
  // are no one's now (spec 04 §7.1), and go.
  std::error_code ec;
  if (index && fresh_index) fs::remove_all(cache + "/settled", ec);
}

std::shared_ptr<const RecordedEntries> Session::State::recorded_steps() {
  if (previous_steps.empty()) return nullptr;
  // Mapped, not read: 7 MB for 10^4 steps, looked at where it lies in the page cache.
  auto bytes = files::map_file(previous_steps, settled->object_bytes);
  if (!bytes.ok()) return nullptr;
  previous_object = std::move(*bytes);
  return recorded_entries(*settled, previous_object);
}

Result<RunOutcome> Session::run(int cancel_fd) {
  State& s = *s_;
  // 6. A settled pipeline whose record still holds is that run again: reported, not
  // re-derived. Otherwise the ordinary run, which records afresh; it reuses the entry
  // of every step whose own facts still hold (record_reuse.h).
  std::optional<SettledReuse> reuse;
  if (s.settled) {
    std::optional<CaptureProbe> own;
    s.check_ns = wall_ns(s.clock().wall());
    s.check = check_settled(*s.settled, s.pool->nodes(), *s.store, s.probe(own));
    if (s.same && !s.check->difference) {
      PreviousRecord previous = s.previous();
      if (auto answered = publish_settled(previous, s.publish_place(), s.clock())) {
        return std::move(*answered);
      }
    }
    BERTH_TRY(reuse, s.reuse_from_record());
  }

  // 7. The ordinary run, its pool made again with the agents' nodes (session.h), on the
  // step runner handed in or the real one (whose staging area outlives its threads).
  if (auto f = std::exchange(s.place.for_steps, nullptr); f && !s.o.dry_run) {
    BERTH_CHECK(f(s.place));
    BERTH_CHECK(s.make_pool());
  }
  RunOptions ro = s.run_options(cancel_fd, std::move(reuse));
  std::optional<Staging> staging;
  std::unique_ptr<StepRunner> own_runner;
  if (!ro.dry_run && ro.runner == nullptr) {
    own_runner = s.launch_runner(staging, cancel_fd);
    ro.runner = own_runner.get();
  }
  BERTH_TRY(RunReport rep, run_graph(*s.graph, *s.store, *s.pool, s.env, ro));
  note_store_waits(s.patient, s.o.store_patience, rep);
  // A whole run's results of steps no longer in the pipeline go (spec 04 §7.5).
  if (!s.o.dry_run) {
    tidy_results_dir(s.results_dir, s.settled_name, rep, s.o.targets.empty(), s.sinks.say);
  }
  // A run whose steps were discovered from directories is that run again only while
  // they hold what they held: their stamps go into the record with the inputs'.
  if (rep.settled && !s.discovered.stable) rep.settled.reset();
  if (rep.settled) {
    for (const auto& [dir, stamp] : s.discovered.dirs) {
      rep.settled->files.push_back({dir, stamp, true, ""});
    }
  }

  // 8. The report: stored with the run, kept beside the pipeline; a run that settled
  // leaves its record for the next. A dry run's is neither kept nor stored (dry_run.h).
  RunOutcome out;
  out.worker = s.worker;
  out.tables_read_again = s.from_tables ? s.tables_again : 0;
  if (s.o.dry_run) describe_dry_run(*s.graph, s.o.dry_run_commands, rep);
  if (!s.o.dry_run) out.text = publish_run(rep, ro.record_settled, s.previous(), s.publish_place());
  out.exit_code = rep.exit_code();
  out.report = std::move(rep);
  return out;
}

Result<std::optional<SettledReuse>> Session::State::reuse_from_record() {
  std::optional<SettledReuse> reuse;
  // The record's entries, then their text (which needs where they lie).
  if (decode_entries() && !recorded) recorded = recorded_steps();
  // A graph made from the edited tables alone, whose other steps cannot all be
  // reused: the file is read whole after all.
  if (from_tables && !tables_hold()) {
    graph.reset();
    from_tables = false;
    BERTH_CHECK(load_graph());
  }
  // The same bytes, some facts changed: the steps that must be keyed again, alone.
  if (!graph && same && recorded) load_fresh();
  if (recorded) {
    reuse.emplace();
    reuse->record = &*settled;
    reuse->check = &*check;
    reuse->steps = recorded;
    reuse->verify_fingerprints = !same || !check->tools_same;
    if (check->tools_same) reuse->same_tables = std::move(same_tables);
    // A table that finds its foreach values among the files may expand otherwise
    // from the same bytes (one value, a name without it): its steps are reused only
    // with their recorded fingerprints, the other tables' steps by their names.
    if (same && check->tools_same && !settled->globbed.empty()) {
      size_t n_tables = 0;
      for (const auto& e : settled->entries) n_tables = std::max<size_t>(n_tables, e.table + 1);
      reuse->verify_fingerprints = true;
      reuse->same_tables.assign(n_tables, 1);
      for (uint32_t k : settled->globbed) {
        if (k < n_tables) reuse->same_tables[k] = 0;
      }
    }
  }
  if (!graph) BERTH_CHECK(load_graph());
  return reuse;
}

RunOptions Session::State::run_options(int cancel_fd, std::optional<SettledReuse> reuse) {
  RunOptions ro;
  ro.results_dir = results_dir;
  ro.dry_run = o.dry_run;
  ro.fail_fast = o.fail_fast;
  ro.jobs = o.jobs;
  ro.clock = o.clock;
  ro.host = place.host;
  ro.shared = shared;
  ro.worker = worker;
  ro.leases = leases.get();
  ro.index = index.get();
  ro.probe = place.probe;
  ro.runner = place.runner;
  ro.cancel_fd = cancel_fd;
  if (sinks.progress) {
    // The progress line says when the store is being waited for.
    ro.progress = [patient = patient, sink = sinks.progress](const Progress& p) {
      std::string wait = patient != nullptr ? patient->waiting() : "";
      if (wait.empty()) return sink(p);
      Progress q = p;
      q.store_wait = std::move(wait);
      sink(q);
    };
  }
  ro.load_previous = [path = report_path] { return previous_bases(path); };
  // A step the record holds finds its previous basis in its recorded entry, already
  // read, rather than in the report beside the pipeline, megabytes read again.
  ro.find_previous = previous_basis_finder(report_path, reuse ? reuse->steps : nullptr,
                                           reuse ? reuse->record : nullptr);
  ro.record_settled = may_settle && ro.index;
  ro.reuse = std::move(reuse);
  return ro;
}

}  // namespace berth::pipeline
