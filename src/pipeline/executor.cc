// The executor (spec 04 §7): ready steps, keys, the store, the pool, launch.
#include "pipeline/executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "launch/job.h"
#include "pipeline/canonical.h"
#include "pipeline/canonicaliser.h"
#include "pipeline/command.h"
#include "pipeline/key.h"
#include "pipeline/step_row.h"
#include "place/launcher.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::pipeline {

const char* step_state_name(StepState s) {
  switch (s) {
    case StepState::kPending: return "pending";
    case StepState::kCached: return "cached";
    case StepState::kExecuted: return "executed";
    case StepState::kFailed: return "failed";
    case StepState::kSkipped: return "skipped";
    case StepState::kRefused: return "refused";
    case StepState::kCancelled: return "cancelled";
  }
  return "pending";
}

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int RunReport::count(StepState s) const {
  int n = 0;
  for (const auto& st : steps) n += st.state == s;
  return n;
}

int RunReport::exit_code() const {
  if (count(StepState::kCancelled)) return 130;
  if (count(StepState::kFailed) || count(StepState::kRefused)) return 1;
  return 0;
}

namespace {

using SteadyClock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// spec 05: the kind of row a step's result is written under.
constexpr std::string_view kStepsRow = "steps";

// The SHA-256 of a file, streamed: inputs may be large.
Result<std::string> hash_file_bytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno == ENOENT ? Errc::kNotFound : Errc::kIo,
                fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  Sha256 h;
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(Errc::kIo, fmt::format("{}: cannot read: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return "sha256:" + h.finish_hex();
}

// The canonical hash of an output file under `form`.
Result<CanonicalHash> hash_output(const std::string& path, const std::string& form_text,
                                  const std::string& object) {
  BERTH_TRY(CanonicalForm form, parse_canonical_form(form_text));
  if (form.kind == CanonicalForm::Kind::kBytes) return CanonicalHash{form.name(), object};
  BERTH_TRY(std::string bytes, files::read_file(path, 1ull << 32));
  // A user's canonicaliser runs in the step's staging directory, like the step.
  std::string cwd = fs::path(path).parent_path().parent_path().string();
  CommandHook hook = [&cwd](const std::vector<std::string>& argv, std::string_view in) {
    return run_canonicaliser(argv, in, cwd);
  };
  return canonical_hash(form, bytes, hook);
}

// Puts the user's file `src` in a staging directory as `dst`: a symlink to its
// absolute path. Neither a hard link nor a copy: a link changes the file's ctime, which
// its stamp holds (index.h), so every run would make the next one rehash its inputs,
// and a copy costs the bytes, across filesystems too. What a symlink gives up — the
// file replaced while the step runs — execute() catches by stamping it again after.
// A filesystem without symlinks gets a hard link (true: its ctime changed), else a copy.
Result<bool> stage_input(const std::string& src, const std::string& dst) {
  std::error_code ec;
  fs::path target = fs::absolute(src, ec);
  if (!ec && ::symlink(target.c_str(), dst.c_str()) == 0) return false;
  if (::link(src.c_str(), dst.c_str()) == 0) return true;
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot copy {} to {}: {}", src, dst, ec.message()));
  return false;
}

// Who a provenance record says computed the outputs.
std::string computed_by(const json& prov) {
  for (const char* k : {"worker", "host"}) {
    if (prov.contains(k) && prov[k].is_string() && !prov[k].get<std::string>().empty()) {
      return prov[k].get<std::string>();
    }
  }
  return "";
}

// A result's stamp, without its ctime: a result is a hard link to its stored object,
// and every other link made to that object (the same bytes materialised for another
// step, or linked into a staging directory) changes the ctime of all of them. A
// write to the result still changes its mtime or size; what this gives up is only
// noticing an in-place edit that also restored the mtime.
Result<FileStamp> result_stamp(const std::string& path) {
  BERTH_TRY(FileStamp st, FileStamp::of(path));
  st.ctime_ns = 0;
  return st;
}

// What a settled record needs of a step's results (settled.h): their stamps once in
// place, and whether every one could be stamped.
struct ResultStamps {
  std::vector<SettledFile> files;
  bool whole = true;
};

struct Done {
  size_t step = 0;
  StepRecord record;
  // record_settled: the results' stamps, and whether the row in force is the one this
  // step wrote (a rerun reports that row's record).
  ResultStamps results;
  bool row_ours = false;
  std::vector<Divergence> divergences;
  std::vector<std::string> problems;
};

// The shape of a placement request. Steps of one shape wait in one queue, so that a
// scan that finds a shape does not fit now skips every other step of it: granting
// stays linear in the steps started, not quadratic in the steps waiting.
using Shape = std::tuple<int, int, int, int>;  // tasks, cpus per task, gpus, nodes (-1: any)

Shape shape_of(const Step& s) {
  return {s.tasks, std::max(1, s.cores / std::max(1, s.tasks)), s.gpus, s.nodes.value_or(-1)};
}

place::Request request_of(const Step& s) {
  place::Request r;
  r.tasks = s.tasks;
  r.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
  r.gpus = s.gpus;
  r.nodes = s.nodes;
  return r;
}

std::string short_hash(std::string_view text) { return sha256_hex(text).substr(0, 16); }

class Executor {
 public:
  Executor(const Graph& g, store::ObjectStore& s, place::Pool& p, const Env& parent,
           const RunOptions& o)
      : g_(g), store_(s), pool_(p), parent_(parent), o_(o) {}

  Result<RunReport> run();

 private:
  Result<void> read_tool_versions();
  Result<void> check_fits();
  // The step's key from its inputs' hashes, and what it was computed from (basis);
  // fails for an unreadable input.
  Result<std::string> key_for(size_t i, json* basis);
  // A cached result: the row read, every output's object present and (unless a dry
  // run) verified and materialised. nullopt when the store has no usable result.
  std::optional<StepRecord> try_cached(size_t i, const std::string& key);
  // Keys a ready step, then: cached → finished; dry run → "would run"; held by another
  // worker → deferred; otherwise queued for a placement.
  void prepare(size_t i);
  // Starts queued steps while the pool grants them.
  void grant_queued();
  // Worker mode: claims step i's key. False when another worker holds it (deferred).
  bool claim(size_t i);
  void start(size_t i, place::Grant grant);
  // Runs step i on its placement and publishes what it wrote. `exited` is called once
  // its processes have ended, before publishing: the placement is free from then on.
  // `known` is called, in a run without leases, once every output is stored and
  // hashed, before the row is written: its dependents may start from then on (they
  // read objects, not the row), and what remains can only add problems.
  // `upstream` holds, in input order, the record of each input item that is another
  // step's output: taken by run()'s thread when the step starts, since the upstream
  // step's own record may still change while this one runs. `stamps` holds, in input
  // order, each file input item's stamp when it was hashed (input_stamps_).
  Done execute(size_t i, const place::Placement& p, const std::string& key,
               const std::vector<StepRecord::Output>& upstream,
               const std::vector<FileStamp>& stamps,
               const std::function<void()>& exited,
               const std::function<void(const StepRecord&)>& known);
  // Puts each result in place unless it already is. `seen`: each result's stamp once
  // it is in place (settled.h), when collecting them.
  Result<void> materialize_results(const StepRecord& r, std::vector<std::string>* problems,
                                   ResultStamps* seen = nullptr);
  // A step ended: record it, count it, and release or ready what depends on it.
  void settle(size_t i, StepRecord rec);
  void skip_dependents(size_t i, const std::string& why);
  void set_state(size_t i, StepState st);
  void rearm();
  void notify();
  // record_settled: moves what the steps saw into report_.settled, when every step was
  // cached or executed and nothing went wrong.
  void collect_settled();
  void summarise_notices();
  // An empty staging directory with in/ and out/ (spec 04 §7): one left by an earlier
  // step when there is one, else a new <staging>/<pid>.<n>. Any thread.
  Result<std::string> acquire_stage();
  // Empties `stage` for the next step, or removes it when it cannot be emptied.
  void release_stage(std::string stage);
  // Removes staging directories left by processes of this host that are gone.
  void sweep_stale_stages();
  // Why a step must run: what differs from the previous run's basis.
  std::string explain(size_t i, const json& basis);
  store::ObjectStore& rows() { return o_.shared ? *o_.shared : store_; }
  double now_s() const {
    return std::chrono::duration<double>(SteadyClock::now() - t0_).count();
  }

  const Graph& g_;
  store::ObjectStore& store_;
  place::Pool& pool_;
  const Env& parent_;
  const RunOptions& o_;
  ToolVersions tools_;
  SteadyClock::time_point t0_;
  RunReport report_;

  // Scheduling: every structure here is touched by the run() thread only.
  std::vector<int> waiting_;                     // unfinished deps per step
  std::vector<std::vector<size_t>> dependents_;  // steps that read each step
  std::deque<size_t> ready_;                     // deps done, not yet keyed
  std::map<Shape, std::deque<size_t>> queued_;   // keyed, not cached: waiting for a grant
  size_t queued_count_ = 0;
  std::vector<size_t> deferred_;                 // claimed by another worker
  std::vector<std::string> keys_;
  std::vector<std::optional<unsigned>> claims_;  // lease generation this worker holds
  std::vector<char> running_flag_;
  std::map<size_t, std::thread> threads_;
  size_t running_ = 0;
  size_t max_running_ = 0;
  bool stop_new_ = false;
  bool cancelled_ = false;
  std::map<StepState, int> counts_;
  double executed_seconds_ = 0;

  // Finished steps, handed from their threads to run().
  std::mutex mu_;
  std::vector<Done> done_;
  std::vector<uint64_t> exited_;  // grants whose processes have ended
  // Steps whose outputs are stored before their row is (execute's `known`).
  std::vector<std::pair<size_t, std::map<std::string, StepRecord::Output>>> known_;
  std::vector<char> released_early_;  // dependents already readied by `known`
  int wake_[2] = {-1, -1};
  std::atomic<uint64_t> staging_seq_{0};
  bool previous_loaded_ = false;
  int quick_lookups_ = 0;
  std::map<std::string, std::string> loaded_previous_;
  std::mutex stage_mu_;
  std::vector<std::string> free_stages_;
  // What the steps saw (record_settled; run() thread only). settleable_ goes
  // false at the first fact that was not verified at a stamp.
  Settled settled_;
  bool settleable_ = true;
  // Per step, the stamp of each file input item at which key_for() knew its hash, in
  // input order (run() thread; moved into the step's thread when it starts).
  std::vector<std::vector<FileStamp>> input_stamps_;
};

Result<void> Executor::read_tool_versions() {
  for (const auto& [name, tool] : g_.tools) {
    auto out = place::VersionProbe::real().run(tool.version);
    if (!out.ok()) {
      return out.error().with_context(fmt::format("{}: tool '{}': version command", g_.path, name));
    }
    tools_[name] = *out;
  }
  return Ok{};
}

Result<void> Executor::check_fits() {
  // One check per distinct request: a 10,000-step fan-out has one shape.
  std::map<Shape, size_t> seen;
  for (size_t i = 0; i < g_.steps.size(); ++i) seen.emplace(shape_of(g_.steps[i]), i);
  for (const auto& [shape, i] : seen) {
    const Step& s = g_.steps[i];
    place::Pool empty(pool_.nodes());
    auto g = empty.grant(request_of(s));
    if (!g.ok()) {
      return fail(Errc::kRefused, fmt::format("{}: step '{}' can never run here: {}", g_.path,
                                              s.name, g.error().message()));
    }
  }
  return Ok{};
}

Result<std::string> Executor::key_for(size_t i, json* basis) {
  const Step& s = g_.steps[i];
  std::vector<FileStamp> stamps;
  InputHashes hashes;
  InputHashes shape;  // the same inputs with no hashes: for the recipe
  json jin = json::object();
  for (const auto& [name, input] : s.inputs) {
    auto& list = hashes[name];
    json items = json::array();
    for (const InputItem& item : input.items) {
      shape[name].push_back({"bytes", ""});
      if (item.kind == InputItem::Kind::kFile) {
        // The index answers when the file's stamp is unchanged; a file is remembered
        // only when its stamp was the same before and after hashing (index.h).
        std::optional<FileStamp> before;
        std::optional<std::string> known;
        if (auto st = FileStamp::of(item.path); st.ok()) {
          before = *st;
          if (o_.index) known = o_.index->file_hash(item.path, *st);
        }
        bool stamped = known.has_value();
        if (!known) {
          BERTH_TRY(std::string h, hash_file_bytes(item.path));
          if (before) {
            if (auto after = FileStamp::of(item.path); after.ok() && *after == *before) {
              if (o_.index) o_.index->remember_file(item.path, *before, h);
              stamped = true;
            }
          }
          known = std::move(h);
        }
        // The stamp its hash is of: a step that runs checks it again once it has read
        // the file (execute), and a change since means the key is not of what it read.
        stamps.push_back(before.value_or(FileStamp{}));
        if (o_.record_settled) {
          if (stamped) {
            settled_.files.push_back({item.path, *before, true});
          } else {
            settleable_ = false;
          }
        }
        list.push_back({"bytes", *known});
      } else {
        const auto& up = report_.steps[item.step].outputs;
        auto it = up.find(item.output);
        if (it == up.end()) {
          return fail(Errc::kInternal, fmt::format("step '{}': input '{}' from '{}' is not "
                                                   "known yet",
                                                   s.name, name, g_.steps[item.step].name));
        }
        list.push_back({it->second.form, it->second.canonical});
      }
      items.push_back(json::array({item.text, list.back().tagged()}));
    }
    jin[name] = std::move(items);
  }
  ToolVersions no_versions;
  json jtools = json::object();
  for (const auto& t : s.tools) {
    no_versions[t] = "";
    auto v = tools_.find(t);
    jtools[t] = short_hash(v == tools_.end() ? "" : v->second);
  }
  BERTH_TRY(std::string key, key_of(s, hashes, tools_));
  if (basis) {
    BERTH_TRY(std::string recipe, key_of(s, shape, no_versions));
    json b;
    b["command"] = describe_command(s);
    b["recipe"] = recipe.substr(0, 16);
    b["inputs"] = std::move(jin);
    b["tools"] = std::move(jtools);
    *basis = std::move(b);
  }
  input_stamps_[i] = std::move(stamps);
  return key;
}

std::string Executor::explain(size_t i, const json& b) {
  // The first few steps to explain are looked up one by one; past that, or for one the
  // quick look-up does not find, the previous report is parsed once, whole.
  constexpr int kQuickLookups = 16;
  std::optional<std::string> quick;
  if (o_.previous.empty() && o_.find_previous && !previous_loaded_ &&
      quick_lookups_ < kQuickLookups) {
    ++quick_lookups_;
    quick = o_.find_previous(g_.steps[i].name);
  }
  if (!quick && !previous_loaded_) {
    previous_loaded_ = true;
    if (o_.previous.empty() && o_.load_previous) loaded_previous_ = o_.load_previous();
  }
  const auto& previous = o_.previous.empty() ? loaded_previous_ : o_.previous;
  auto prev = previous.find(g_.steps[i].name);
  if (!quick && prev == previous.end()) return "new: no earlier run of this step is recorded here";
  json a = json::parse(quick ? *quick : prev->second, nullptr, false);
  if (a.is_discarded() || !a.is_object() || b.is_discarded()) {
    return "new: the earlier run's record of this step is unreadable";
  }
  std::vector<std::string> why;
  if (a.value("command", "") != b.value("command", "")) why.push_back("its command changed");
  else if (a.value("recipe", "") != b.value("recipe", "")) {
    why.push_back("its params, environment or outputs changed");
  }
  const json& ai = a.contains("inputs") && a["inputs"].is_object() ? a["inputs"] : json::object();
  for (auto& [name, items] : b["inputs"].items()) {
    if (!ai.contains(name)) {
      why.push_back(fmt::format("input '{}' is new", name));
    } else if (ai[name] != items) {
      std::vector<std::string> what;
      for (size_t k = 0; k < items.size(); ++k) {
        if (k >= ai[name].size() || ai[name][k] != items[k]) {
          what.push_back(items[k][0].get<std::string>());
        }
      }
      why.push_back(what.empty() ? fmt::format("input '{}' changed", name)
                                 : fmt::format("input '{}' changed ({})", name,
                                               str::join(what, ", ")));
    }
  }
  const json& at = a.contains("tools") && a["tools"].is_object() ? a["tools"] : json::object();
  for (auto& [name, v] : b["tools"].items()) {
    if (!at.contains(name) || at[name] != v) why.push_back(fmt::format("tool '{}' changed", name));
  }
  if (why.empty()) return "its result is not in the store (never published, or removed)";
  return str::join(why, "; ");
}

std::optional<StepRecord> Executor::try_cached(size_t i, const std::string& key) {
  // The index remembers rows this machine has read or written; the store is the
  // authority, and every object is still checked there.
  std::optional<std::string> text;
  if (o_.index) text = o_.index->step_row(key);
  bool from_index = text.has_value();
  if (!text) {
    auto row = rows().get_row(store::row_address(kStepsRow, key));
    if (!row.ok()) {
      report_.problems.push_back(fmt::format("step '{}': {}", g_.steps[i].name,
                                             row.error().message()));
      return std::nullopt;
    }
    if (!row->has_value()) return std::nullopt;
    text = std::move(**row);
  }
  auto j = read_step_row(*text);
  if (!j) {
    report_.problems.push_back(fmt::format("step '{}': the row for key {} does not parse; "
                                           "recomputing",
                                           g_.steps[i].name, key));
    return std::nullopt;
  }
  StepRecord r;  // its basis is moved in by prepare()
  r.name = report_.steps[i].name;
  r.key = key;
  for (const std::string& out : g_.steps[i].outputs) {
    auto it = j->outputs.find(out);
    if (it == j->outputs.end() || j->malformed.count(out)) return std::nullopt;
    const auto& o = it->second;
    auto str_field = [&](const char* k, const char* def) {
      auto f = o.find(k);
      return f != o.end() ? f->second : std::string(def);
    };
    StepRecord::Output rec{str_field("object", ""), str_field("form", "bytes"),
                           str_field("canonical", "")};
    if (!store::check_object_name(rec.object).ok()) return std::nullopt;
    auto has = store_.has_object(rec.object);
    if (!has.ok() || !*has) return std::nullopt;
    if (o_.record_settled) settled_.objects.push_back(rec.object);
    r.outputs[out] = rec;
  }
  if (o_.index && !from_index) o_.index->remember_step(key, *text);
  // A cache hit adopts the record of the run that computed it.
  r.computed_by = !j->worker.empty() ? j->worker : j->host;
  if (!j->host.empty()) r.node = j->host;
  if (!j->cores.empty()) r.cores = j->cores;
  if (!o_.dry_run) {
    std::vector<std::string> problems;
    ResultStamps seen;
    auto m = materialize_results(r, &problems, o_.record_settled ? &seen : nullptr);
    if (!m.ok()) problems.push_back(m.error().message());
    if (o_.record_settled) {
      for (auto& f : seen.files) settled_.files.push_back(std::move(f));
      if (!seen.whole) settleable_ = false;
    }
    if (!problems.empty()) {
      for (auto& p : problems) report_.problems.push_back(p);
      return std::nullopt;  // a corrupt or missing object is recomputed
    }
  }
  r.state = StepState::kCached;
  r.reason = std::string(kCachedReason);
  return r;
}

Result<void> Executor::materialize_results(const StepRecord& r, std::vector<std::string>* problems,
                                           ResultStamps* seen) {
  std::string dir = fmt::format("{}/{}", o_.results_dir, r.name);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return fail(Errc::kIo, fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  }
  for (const auto& [out, rec] : r.outputs) {
    std::string dest = dir + "/" + out;
    // A result already in place, unchanged since it was verified, is not touched:
    // a no-op rerun stats instead of rehashing.
    if (o_.index) {
      if (auto st = result_stamp(dest); st.ok()) {
        if (o_.index->file_hash(dest, *st) == rec.object) {
          if (seen) seen->files.push_back({dest, *st, false});
          continue;
        }
      }
    }
    // materialize() replaces `dest` atomically, never writing into it.
    auto got = store_.materialize(rec.object, dest);
    if (!got.ok()) return got.error();
    if (!got->present()) {
      problems->push_back(got->problem.empty()
                              ? fmt::format("step '{}': object {} of output '{}' is missing",
                                            r.name, rec.object, out)
                              : fmt::format("step '{}': {}", r.name, got->problem));
      continue;
    }
    if (o_.index) {
      if (auto st = result_stamp(dest); st.ok()) {
        o_.index->remember_file(dest, *st, rec.object);
        if (seen) seen->files.push_back({dest, *st, false});
      } else if (seen) {
        seen->whole = false;
      }
    }
  }
  return Ok{};
}

Done Executor::execute(size_t i, const place::Placement& p, const std::string& key,
                       const std::vector<StepRecord::Output>& upstream,
                       const std::vector<FileStamp>& stamps,
                       const std::function<void()>& exited,
                       const std::function<void(const StepRecord&)>& known) {
  const Step& s = g_.steps[i];
  Done d;
  d.step = i;
  d.record = report_.steps[i];
  StepRecord& r = d.record;
  r.key = key;
  // Every node the step runs on, not only the first (a two-node MPI step is on both).
  r.node = p.nodes.empty() ? o_.host : str::join(p.nodes, ",");
  r.cores = place::format_ids(p.cores.empty() ? std::vector<int>{} : p.cores[0]);
  r.start_s = now_s();
  std::string started = iso_now();
  std::string stage;
  auto cleanup = [&] {
    if (stage.empty()) return;
    release_stage(std::move(stage));
    stage.clear();
  };
  // end_s is when the step's processes ended (or it failed before they started): its
  // cores are given to the next step then, so a later end would overlap that step on
  // the same cores in the report's timeline. Publishing is berth's time, not the step's.
  bool ended = false;
  auto end_now = [&] {
    if (ended) return;
    ended = true;
    r.end_s = now_s();
  };
  auto failed = [&](std::string why, int code = 1) {
    r.state = StepState::kFailed;
    r.reason = std::move(why);
    r.exit_code = code;
    end_now();
    cleanup();
    return d;
  };

  // 1. An empty staging directory of its own: inputs linked in, outputs written there.
  auto staged = acquire_stage();
  if (!staged.ok()) return failed(staged.error().message());
  stage = std::move(*staged);
  StagedPaths paths;
  json prov_inputs = json::object();
  size_t next_upstream = 0;
  // The file input items, in input order, and whether each was hard-linked in.
  std::vector<std::pair<const InputItem*, bool>> files_in;
  for (const auto& [name, input] : s.inputs) {
    json items = json::array();
    for (size_t k = 0; k < input.items.size(); ++k) {
      const InputItem& item = input.items[k];
      std::string dest = fmt::format("{}/in/{}.{}", stage, name, k);
      if (item.kind == InputItem::Kind::kFile) {
        auto linked = stage_input(item.path, dest);
        if (!linked.ok()) return failed(linked.error().message());
        files_in.emplace_back(&item, *linked);
        items.push_back({{"file", item.text}});
      } else {
        const auto& rec = upstream.at(next_upstream++);
        auto got = store_.materialize(rec.object, dest);
        if (!got.ok()) return failed(got.error().message());
        if (!got->present()) {
          return failed(fmt::format("input '{}' ({}) is not in the store: {}", name, item.text,
                                    got->problem));
        }
        items.push_back({{"step", g_.steps[item.step].name}, {"output", item.output},
                         {"object", rec.object}, {"canonical", rec.form + " " + rec.canonical}});
      }
      paths.inputs[name].push_back(dest);
    }
    prov_inputs[name] = std::move(items);
  }
  for (const std::string& out : s.outputs) paths.outputs[out] = stage + "/out/" + out;
  auto cmd = render_command(s, paths);
  if (!cmd.ok()) return failed(cmd.error().message());

  // 2. Launch: bound to its cores on this node, or through the machine's launcher.
  launch::JobSpec job;
  launch::AppSpec app;
  app.ranks = 1;
  app.cwd = stage;
  bool here = r.node == o_.host;
  if (here) {
    app.argv = cmd->argv;
    app.cpu_set = p.cores.empty() ? std::vector<int>{} : p.cores[0];
    app.ranks = s.tasks;
    if (s.memory_cap_mb) {
      // berth sets no memory limit on this node (no cgroup of its own): say so with the
      // step rather than let a cap look kept.
      r.notices.push_back(
          fmt::format("memory_cap_mb = {} is not enforced: the step ran on "
                      "this node, where berth sets no memory limit",
                      *s.memory_cap_mb));
    }
  } else {
    if (!o_.machine || !o_.launcher) {
      return failed(fmt::format("placed on '{}', but no launcher reaches other nodes", r.node));
    }
    place::LaunchSpec ls;
    ls.tasks = s.tasks;
    ls.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
    ls.command = cmd->argv;
    ls.memory_cap = s.memory_cap_mb;
    ls.mpi = s.mpi;
    auto rendered = place::render(*o_.machine, *o_.launcher, p, ls);
    if (!rendered.ok()) {
      // Refused by the launcher (a wire-up it cannot give, a placement it cannot
      // honour): nothing of the step ran, and it says so rather than "failed".
      if (rendered.error().code() == Errc::kRefused) {
        Done refused = failed(rendered.error().message(), 0);
        refused.record.state = StepState::kRefused;
        return refused;
      }
      return failed(rendered.error().message());
    }
    app.argv = rendered->argv;
    // What the launcher will not do (an unenforced cap, no --mpi) goes with the step.
    for (const auto& note : rendered->notes) r.notices.push_back(note);
  }
  for (const auto& [k, v] : cmd->env) app.env.push_back({launch::EnvDirective::kSet, k, v, "", false});
  job.apps.push_back(app);
  // A step's tasks on this node are one MPI job on berth's own wire-up; through a
  // launcher, the launcher's wire-up serves them (place::render asks for it).
  job.mpi = here ? s.mpi : wireup::Mode::kNone;
  job.bind = launch::BindTo::kNone;
  job.node = o_.host;
  job.stdin_mode = launch::StdinMode::kNone;
  job.own_signals = false;
  job.cancel_fd = o_.cancel_fd;
  job.output = launch::OutputMode::kPlain;
  std::string log;
  std::mutex log_mu;
  launch::OutputSinks sinks;
  sinks.out = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.append(line);
  };
  sinks.err = sinks.out;
  auto outcome = launch::run_job(job, parent_, launch::Spawner::real(), sinks);
  // Its processes are gone: the cores and GPUs go back to the pool now, and the next
  // step starts while this one is hashed and published (that work is berth's own).
  end_now();
  exited();
  if (!outcome.ok()) return failed(outcome.error().message());
  if (!log.empty()) {
    // Each step's output reaches the user once, prefixed, after the step.
    std::string prefixed;
    for (auto line : str::split(log, '\n')) {
      if (!line.empty()) prefixed += fmt::format("[{}] {}\n", s.name, line);
    }
    std::fwrite(prefixed.data(), 1, prefixed.size(), stderr);
  }
  if (outcome->exit_code != 0) {
    std::string why = outcome->messages.empty() ? "failed" : outcome->messages[0];
    if (outcome->exit_code == 130) {
      r.state = StepState::kCancelled;
      r.reason = "cancelled";
      cleanup();
      return d;
    }
    return failed(why, outcome->exit_code);
  }

  // Every file input it read still has the stamp its hash is of: otherwise its
  // outputs may come from bytes the key does not name, and are not stored. (A hard
  // link made for staging changed the ctime: that one is not compared.)
  for (size_t k = 0; k < files_in.size() && k < stamps.size(); ++k) {
    auto now = FileStamp::of(files_in[k].first->path);
    FileStamp want = stamps[k];
    if (now.ok() && files_in[k].second) now->ctime_ns = want.ctime_ns;
    if (!now.ok() || *now != want) {
      return failed(fmt::format("input {} changed while the step ran; its outputs are not "
                                "stored, and it runs again next time",
                                str::printable(files_in[k].first->text, 200)));
    }
  }

  // 3. Publish: every output as an object, then — only then — the row.
  json outputs = json::object();
  for (const std::string& out : s.outputs) {
    const std::string& path = paths.outputs[out];
    if (!files::exists(path)) {
      return failed(fmt::format("declared output '{}' was not written ({})", out, path));
    }
    // The output is handed over: the store may make it the stored copy (no copy).
    auto object = store_.adopt_object_file(path);
    if (!object.ok()) return failed(object.error().message());
    auto canon = hash_output(path, s.canonical.count(out) ? s.canonical.at(out) : "bytes", *object);
    if (!canon.ok()) return failed(canon.error().with_context("output '" + out + "'").message());
    r.outputs[out] = {*object, canon->form, canon->hash};
    outputs[out] = output_json(r.outputs[out]);
  }
  // In a run without leases nobody else is expected to publish this key, so its
  // dependents need not wait for the row to be durable: they start now. A row that
  // then fails to be written costs the cache entry (a problem), not the step.
  bool announced = !o_.leases && known;
  if (announced) known(r);
  json row;
  row["version"] = 1;
  row["key"] = key;
  row["step"] = s.name;
  row["outputs"] = outputs;
  json prov;
  prov["command"] = describe_command(s);
  prov["inputs"] = std::move(prov_inputs);
  prov["params"] = json::object();
  for (const auto& [k, v] : s.params) prov["params"][k] = v.text;
  prov["tools"] = json::object();
  for (const auto& t : s.tools) prov["tools"][t] = tools_.count(t) ? tools_.at(t) : "";
  prov["engine_version"] = o_.engine_version;
  prov["platform"] = o_.platform;
  prov["host"] = r.node;
  prov["cores"] = r.cores;
  prov["gpus"] = p.gpus;
  prov["tasks"] = s.tasks;
  if (!o_.worker.empty()) prov["worker"] = o_.worker;
  prov["start"] = started;
  prov["end"] = iso_now();
  prov["elapsed_s"] = r.end_s - r.start_s;
  row["provenance"] = prov;
  std::string mine = row.dump();
  auto put = rows().put_row(store::row_address(kStepsRow, key), mine);
  if (!put.ok() && !announced) return failed(put.error().message());
  r.computed_by = computed_by(prov);
  if (!put.ok()) {
    // Its dependents have its outputs already, and its results are materialised
    // below: only the cache entry is lost.
    d.problems.push_back(fmt::format("step '{}': its row was not written: {}; it will be "
                                     "recomputed next time",
                                     s.name, put.error().message()));
  } else if (!put->created) {
    // Another computation of this key published first; the row it wrote carries its
    // outputs' canonical hashes, so this worker learns without another read whether
    // the winner meant the same (spec 06). Either way the winner's row is in force.
    json theirs = json::parse(put->existing, nullptr, false);
    bool readable = !theirs.is_discarded() && theirs.is_object() && theirs.contains("outputs") &&
                    theirs["outputs"].is_object();
    for (auto& [out, rec] : r.outputs) {
      const json* o = readable && theirs["outputs"].contains(out) ? &theirs["outputs"][out] : nullptr;
      std::string other = o && o->is_object() ? o->value("canonical", "") : "";
      std::string object = o && o->is_object() ? o->value("object", "") : "";
      if (other != rec.canonical) d.divergences.push_back({s.name, key, out, rec.canonical, other});
      if (store::check_object_name(object).ok()) rec.object = object;
    }
    if (readable && theirs.contains("provenance") && theirs["provenance"].is_object()) {
      r.computed_by = computed_by(theirs["provenance"]);
    }
  }
  if (o_.index && put.ok()) o_.index->remember_step(key, put->created ? mine : put->existing);
  d.row_ours = put.ok() && put->created;
  auto m = materialize_results(r, &d.problems, o_.record_settled ? &d.results : nullptr);
  cleanup();
  if (!m.ok()) {
    if (announced) {
      d.problems.push_back(fmt::format("step '{}': {}", s.name, m.error().message()));
    } else {
      return failed(m.error().message());
    }
  }
  r.state = StepState::kExecuted;
  r.exit_code = 0;
  return d;
}

Result<std::string> Executor::acquire_stage() {
  {
    std::lock_guard<std::mutex> lock(stage_mu_);
    if (!free_stages_.empty()) {
      std::string stage = std::move(free_stages_.back());
      free_stages_.pop_back();
      return stage;
    }
  }
  std::string stage = fmt::format("{}/{}.{}", o_.staging_dir, ::getpid(), staging_seq_++);
  // A directory of this name is left by an earlier process with this pid: stale.
  std::error_code ec;
  fs::remove_all(stage, ec);
  for (const std::string& dir : {stage, stage + "/in", stage + "/out"}) {
    if (::mkdir(dir.c_str(), 0777) != 0) {
      return fail(Errc::kIo, fmt::format("cannot create staging directory {}: {}", dir,
                                         std::strerror(errno)));
    }
  }
  return stage;
}

void Executor::release_stage(std::string stage) {
  // Everything the step left goes; in/ and out/ stay, empty. Whatever cannot be
  // removed (a step that made a directory unwritable) costs the directory, not the run.
  std::error_code ec;
  bool clean = true;
  for (const auto& entry : fs::directory_iterator(stage, ec)) {
    std::string name = entry.path().filename().string();
    bool keep = (name == "in" || name == "out") && entry.is_directory(ec) && !entry.is_symlink(ec);
    if (!keep) {
      clean = fs::remove_all(entry.path(), ec) != static_cast<std::uintmax_t>(-1) && !ec && clean;
      continue;
    }
    for (const auto& inner : fs::directory_iterator(entry.path(), ec)) {
      clean = fs::remove_all(inner.path(), ec) != static_cast<std::uintmax_t>(-1) && !ec && clean;
    }
    if (ec) clean = false;
  }
  if (ec) clean = false;
  if (clean) {
    for (const char* sub : {"/in", "/out"}) {
      struct stat st {};
      if (::lstat((stage + sub).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) clean = false;
    }
  }
  if (!clean) {
    fs::remove_all(stage, ec);
    return;
  }
  std::lock_guard<std::mutex> lock(stage_mu_);
  free_stages_.push_back(std::move(stage));
}

void Executor::sweep_stale_stages() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o_.staging_dir, ec)) {
    // <pid>.<n>: made by a process of this cache; removed when that process is gone.
    std::string name = entry.path().filename().string();
    size_t dot = name.find('.');
    if (dot == 0 || dot == std::string::npos) continue;
    auto pid = str::parse_uint(std::string_view(name).substr(0, dot), INT32_MAX);
    auto seq = str::parse_uint(std::string_view(name).substr(dot + 1));
    if (!pid.ok() || !seq.ok() || *pid == 0) continue;
    if (::kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
  }
}

void Executor::set_state(size_t i, StepState st) {
  StepState& cur = report_.steps[i].state;
  if (cur != StepState::kPending) --counts_[cur];
  cur = st;
  if (st != StepState::kPending) ++counts_[st];
}

void Executor::notify() {
  if (!o_.progress) return;
  Progress p;
  p.total = g_.steps.size();
  for (const auto& [st, n] : counts_) p.done += static_cast<size_t>(n);
  p.running = running_;
  p.deferred = deferred_.size();
  p.executed = counts_[StepState::kExecuted];
  p.cached = counts_[StepState::kCached];
  p.failed = counts_[StepState::kFailed];
  p.skipped = counts_[StepState::kSkipped];
  p.elapsed_s = now_s();
  if (p.executed > 0) {
    double mean = executed_seconds_ / p.executed;
    double left = static_cast<double>(p.total - p.done);
    p.eta_s = mean * left / static_cast<double>(std::max<size_t>(1, max_running_));
  }
  o_.progress(p);
}

void Executor::skip_dependents(size_t i, const std::string& why) {
  std::vector<size_t> stack(dependents_[i].begin(), dependents_[i].end());
  while (!stack.empty()) {
    size_t j = stack.back();
    stack.pop_back();
    if (report_.steps[j].state != StepState::kPending || running_flag_[j]) continue;
    set_state(j, StepState::kSkipped);
    report_.steps[j].reason = why;
    for (size_t k : dependents_[j]) stack.push_back(k);
  }
}

void Executor::settle(size_t i, StepRecord rec) {
  StepState st = rec.state;
  rec.state = report_.steps[i].state;
  report_.steps[i] = std::move(rec);
  set_state(i, st);
  if (st == StepState::kExecuted) executed_seconds_ += report_.steps[i].end_s - report_.steps[i].start_s;
  if (st == StepState::kExecuted || st == StepState::kCached) {
    if (released_early_[i]) return;
    for (size_t j : dependents_[i]) {
      if (--waiting_[j] == 0 && report_.steps[j].state == StepState::kPending) ready_.push_back(j);
    }
    return;
  }
  const char* what = st == StepState::kRefused ? "was refused" : st == StepState::kCancelled
                                                                     ? "was interrupted"
                                                                     : "failed";
  skip_dependents(i, fmt::format("not run: '{}' {}", report_.steps[i].name, what));
  if (st == StepState::kFailed && o_.fail_fast) stop_new_ = true;
}

void Executor::prepare(size_t i) {
  StepRecord& rec = report_.steps[i];
  if (rec.state != StepState::kPending) return;
  if (keys_[i].empty() || rec.basis.is_null()) {
    json basis;
    auto key = key_for(i, &basis);
    if (!key.ok()) {
      StepRecord r = rec;
      r.state = StepState::kFailed;
      r.reason = key.error().message();
      settle(i, std::move(r));
      return;
    }
    keys_[i] = *key;
    rec.key = *key;
    rec.basis = std::move(basis);
  }
  if (auto cached = try_cached(i, keys_[i])) {
    cached->basis = std::move(rec.basis);
    settle(i, std::move(*cached));
    return;
  }
  if (o_.dry_run) {
    // Dependents stay pending: their inputs are not known until this runs.
    set_state(i, StepState::kSkipped);
    rec.reason = "would run: " + explain(i, rec.basis);
    return;
  }
  rec.reason = explain(i, rec.basis);
  queued_[shape_of(g_.steps[i])].push_back(i);
  ++queued_count_;
}

bool Executor::claim(size_t i) {
  StepRecord& rec = report_.steps[i];
  auto c = o_.leases->acquire(keys_[i]);
  if (!c.ok()) {
    // The lease only saves work: a store that cannot take one costs duplicates, not
    // the run (spec 06).
    report_.problems.push_back(fmt::format("step '{}': lease: {}; running it without one",
                                           rec.name, c.error().message()));
    return true;
  }
  switch (c->outcome) {
    case Leases::Outcome::kHeld:
      ++report_.leases.held;
      rec.reason = fmt::format("claimed by worker '{}'", c->holder);
      deferred_.push_back(i);
      return false;
    case Leases::Outcome::kAcquired:
      ++report_.leases.acquired;
      claims_[i] = c->generation;
      return true;
    case Leases::Outcome::kLockFree:
      ++report_.leases.lock_free;
      return true;
  }
  return true;
}

void Executor::grant_queued() {
  for (auto& [shape, queue] : queued_) {
    while (!queue.empty() && !stop_new_ && !cancelled_) {
      size_t i = queue.front();
      auto grant = pool_.grant(request_of(g_.steps[i]));
      if (grant.ok() && !grant->has_value()) break;  // this shape waits for a release
      queue.pop_front();
      --queued_count_;
      if (!grant.ok()) {
        StepRecord r = report_.steps[i];
        r.state = StepState::kRefused;
        r.reason = grant.error().message();
        settle(i, std::move(r));
        continue;
      }
      // Claim the key only now, with a placement in hand: a worker claims what it is
      // about to run, never its whole queue.
      if (o_.leases && !claim(i)) {
        pool_.release((*grant)->id);
        continue;
      }
      start(i, std::move(**grant));
    }
  }
}

void Executor::start(size_t i, place::Grant grant) {
  running_flag_[i] = 1;
  ++running_;
  max_running_ = std::max(max_running_, running_);
  report_.steps[i].start_s = now_s();
  std::vector<StepRecord::Output> upstream;
  for (const auto& [name, input] : g_.steps[i].inputs) {
    for (const InputItem& item : input.items) {
      if (item.kind == InputItem::Kind::kFile) continue;
      upstream.push_back(report_.steps[item.step].outputs.at(item.output));
    }
  }
  threads_.emplace(i, std::thread([this, i, key = keys_[i], grant = std::move(grant),
                                   upstream = std::move(upstream),
                                   stamps = std::move(input_stamps_[i])] {
    bool released = false;
    auto exited = [&] {
      if (released) return;
      released = true;
      {
        std::lock_guard<std::mutex> lock(mu_);
        exited_.push_back(grant.id);
      }
      char c = 1;
      [[maybe_unused]] ssize_t w = ::write(wake_[1], &c, 1);
    };
    auto known = [&](const StepRecord& r) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        known_.emplace_back(i, r.outputs);
      }
      char c = 1;
      [[maybe_unused]] ssize_t w = ::write(wake_[1], &c, 1);
    };
    Done d = execute(i, grant.placement, key, upstream, stamps, exited, known);
    exited();  // a step that failed before it launched
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(d));
    }
    char c = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_[1], &c, 1);
  }));
  notify();
}

void Executor::rearm() {
  ++report_.leases.rearms;
  for (size_t i : deferred_) ready_.push_back(i);
  deferred_.clear();
}

void Executor::collect_settled() {
  size_t n = g_.steps.size();
  if (!o_.index || o_.dry_run || o_.leases || cancelled_ || !settleable_ || n == 0 ||
      static_cast<size_t>(report_.count(StepState::kCached) +
                          report_.count(StepState::kExecuted)) != n ||
      !report_.problems.empty() || !report_.divergences.empty()) {
    return;
  }
  // One stamp per path: a file two steps read is checked once. The same path seen
  // at two stamps changed during the run; no record then.
  auto& files = settled_.files;
  std::sort(files.begin(), files.end(), [](const SettledFile& a, const SettledFile& b) {
    return std::tie(a.path, a.with_ctime) < std::tie(b.path, b.with_ctime);
  });
  for (size_t k = 1; k < files.size(); ++k) {
    if (files[k].path == files[k - 1].path && files[k] != files[k - 1]) return;
  }
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::sort(settled_.objects.begin(), settled_.objects.end());
  settled_.objects.erase(std::unique(settled_.objects.begin(), settled_.objects.end()),
                         settled_.objects.end());
  std::set<Shape> shapes;
  for (const Step& s : g_.steps) shapes.insert(shape_of(s));
  for (const auto& [tasks, cpus, gpus, nodes] : shapes) {
    settled_.requests.push_back({tasks, cpus, gpus, nodes});
  }
  for (const auto& [name, tool] : g_.tools) {
    auto v = tools_.find(name);
    if (v == tools_.end()) return;
    settled_.tools.push_back({tool.version, v->second});
  }
  settled_.pipeline = g_.name;
  settled_.steps = n;
  report_.settled = std::move(settled_);
}

void Executor::summarise_notices() {
  // One line for the run: how many steps asked for what their launcher did not do, and
  // the first of them with its first notice; every step keeps its own lines.
  std::vector<size_t> noted;
  for (size_t i = 0; i < report_.steps.size(); ++i) {
    if (!report_.steps[i].notices.empty()) noted.push_back(i);
  }
  if (noted.empty()) return;
  const StepRecord& first = report_.steps[noted[0]];
  report_.launch_notices.push_back(fmt::format(
      "{} step(s) asked for what their launcher did not do; {}: {}{}", noted.size(), first.name,
      first.notices[0], noted.size() > 1 ? " (each step's notices are in the report)" : ""));
}

Result<RunReport> Executor::run() {
  t0_ = SteadyClock::now();
  report_.pipeline = g_.name;
  report_.store = store_.describe();
  report_.worker = o_.worker;
  report_.notices = store_.notices();
  report_.started = iso_now();
  size_t n = g_.steps.size();
  report_.steps.resize(n);
  waiting_.assign(n, 0);
  dependents_.assign(n, {});
  keys_.assign(n, "");
  claims_.assign(n, std::nullopt);
  running_flag_.assign(n, 0);
  released_early_.assign(n, 0);
  input_stamps_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    report_.steps[i].name = g_.steps[i].name;
    waiting_[i] = static_cast<int>(g_.steps[i].deps.size());
    for (size_t dep : g_.steps[i].deps) dependents_[dep].push_back(i);
    if (waiting_[i] == 0) ready_.push_back(i);
  }
  // Before anything runs: every step must be able to fit, every tool must answer.
  BERTH_CHECK(check_fits());
  BERTH_CHECK(read_tool_versions());
  if (!o_.dry_run && ::mkdir(o_.results_dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return fail(Errc::kIo, fmt::format("cannot create {}: {}", o_.results_dir,
                                       std::strerror(errno)));
  }
  if (!o_.dry_run && !o_.staging_dir.empty()) sweep_stale_stages();
  if (::pipe2(wake_, O_CLOEXEC) != 0) return fail(Errc::kIo, "pipe: " + std::string(std::strerror(errno)));
  // The run's index writes are batched, committed every second or so: a 10,000-step
  // rerun is a few commits, and a killed run loses at most a second of what it learnt.
  if (o_.index) (void)o_.index->begin();
  auto last_commit = SteadyClock::now();

  auto backoff = o_.backoff_min;
  auto next_rearm = SteadyClock::time_point::max();
  size_t deferred_before_rearm = 0;
  bool judged = true;  // whether the last re-arm's effect has been judged
  for (;;) {
    while (!ready_.empty() && !cancelled_ && !stop_new_) {
      size_t i = ready_.front();
      ready_.pop_front();
      prepare(i);
      notify();
    }
    if (!judged && ready_.empty()) {
      // A re-arm that found work (done elsewhere, or a claim expired) starts the
      // backoff again; one that found everything still claimed doubles it.
      judged = true;
      backoff = deferred_.size() < deferred_before_rearm
                    ? o_.backoff_min
                    : std::min(o_.backoff_max, backoff * 2);
    }
    grant_queued();
    if (o_.index && SteadyClock::now() - last_commit > std::chrono::seconds(1)) {
      (void)o_.index->commit();
      (void)o_.index->begin();
      last_commit = SteadyClock::now();
    }
    if (running_ == 0 && queued_count_ > 0 && !stop_new_ && !cancelled_) {
      // Nothing runs and still nothing fits: it never will (a reservation holds it).
      for (auto& [shape, queue] : queued_) {
        for (size_t i : queue) {
          StepRecord r = report_.steps[i];
          r.state = StepState::kRefused;
          r.reason = "does not fit in the pool even with nothing else running";
          settle(i, std::move(r));
        }
        queue.clear();
      }
      queued_count_ = 0;
      continue;
    }
    bool idle = running_ == 0 && ready_.empty();
    if (idle && (deferred_.empty() || cancelled_ || stop_new_)) break;
    if (!deferred_.empty() && next_rearm == SteadyClock::time_point::max()) {
      next_rearm = SteadyClock::now() + backoff;
    }
    int timeout_ms = -1;
    if (next_rearm != SteadyClock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_rearm -
                                                                        SteadyClock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    // Wait for a step to end, the run to be cancelled, or the next re-arm. This thread
    // is the only one that waits between scopes: no step thread is ever blocked here.
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {o_.cancel_fd, POLLIN, 0}};
    int got = ::poll(fds, o_.cancel_fd >= 0 && !cancelled_ ? 2 : 1, timeout_ms);
    if (got < 0 && errno == EINTR) continue;
    if (o_.cancel_fd >= 0 && !cancelled_ && (fds[1].revents & POLLIN)) {
      cancelled_ = true;  // running jobs see the same descriptor and end themselves
    }
    if (fds[0].revents & POLLIN) {
      char buf[256];
      [[maybe_unused]] ssize_t r = ::read(wake_[0], buf, sizeof buf);
    }
    if (next_rearm != SteadyClock::time_point::max() && SteadyClock::now() >= next_rearm) {
      next_rearm = SteadyClock::time_point::max();
      if (!cancelled_ && !stop_new_) {
        deferred_before_rearm = deferred_.size();
        judged = false;
        rearm();
      }
    }
    std::vector<Done> finished;
    std::vector<uint64_t> freed;
    std::vector<std::pair<size_t, std::map<std::string, StepRecord::Output>>> known;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished.swap(done_);
      freed.swap(exited_);
      known.swap(known_);
    }
    for (uint64_t id : freed) pool_.release(id);
    for (auto& [i, outputs] : known) {
      // Before its Done (pushed after this, by the same thread): dependents may start.
      report_.steps[i].outputs = std::move(outputs);
      released_early_[i] = 1;
      for (size_t j : dependents_[i]) {
        if (--waiting_[j] == 0 && report_.steps[j].state == StepState::kPending) ready_.push_back(j);
      }
    }
    for (Done& d : finished) {
      --running_;
      running_flag_[d.step] = 0;
      if (auto t = threads_.find(d.step); t != threads_.end()) {
        t->second.join();
        threads_.erase(t);
      }
      for (auto& dv : d.divergences) report_.divergences.push_back(dv);
      for (auto& p : d.problems) report_.problems.push_back(p);
      bool ok = d.record.state == StepState::kExecuted;
      if (!ok && claims_[d.step] && o_.leases) {
        // A failed or interrupted step hands its key back: another worker may do it.
        if (o_.leases->release(keys_[d.step], *claims_[d.step]).ok()) ++report_.leases.released;
      }
      claims_[d.step].reset();
      if (o_.record_settled && ok) {
        // An executed step is in a settled record as a rerun would report it: from
        // its row (ours only), its objects present and its results in place.
        if (!d.row_ours || !d.results.whole) settleable_ = false;
        for (auto& f : d.results.files) settled_.files.push_back(std::move(f));
        for (const auto& [out, rec] : d.record.outputs) settled_.objects.push_back(rec.object);
      }
      settle(d.step, std::move(d.record));
      notify();
    }
  }
  for (auto& [i, t] : threads_) t.join();
  for (const std::string& stage : free_stages_) {
    std::error_code ec;
    fs::remove_all(stage, ec);
  }
  free_stages_.clear();
  if (o_.index) (void)o_.index->commit();  // a failed commit only loses the cache
  ::close(wake_[0]);
  ::close(wake_[1]);
  for (size_t i = 0; i < n; ++i) {
    StepRecord& rec = report_.steps[i];
    if (rec.state != StepState::kPending) continue;
    if (o_.dry_run) {
      set_state(i, StepState::kSkipped);
      rec.reason = "would run: an input it reads would be recomputed";
    } else {
      set_state(i, cancelled_ ? StepState::kCancelled : StepState::kSkipped);
      rec.reason = cancelled_ ? "not run: the run was interrupted" : "not run: --fail-fast";
    }
  }
  if (o_.record_settled) collect_settled();
  summarise_notices();
  report_.elapsed_s = now_s();
  return std::move(report_);
}

}  // namespace

Result<RunReport> run_graph(const Graph& graph, store::ObjectStore& store, place::Pool& pool,
                            const Env& parent, const RunOptions& options) {
  Executor e(graph, store, pool, parent, options);
  return e.run();
}

}  // namespace berth::pipeline
