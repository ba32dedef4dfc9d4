// Session (session.h): one run of a pipeline, opened and run.
#include "pipeline/session.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <nlohmann/json.hpp>

#include "pipeline/discover.h"
#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/lease.h"
#include "pipeline/pipeline_file.h"
#include "pipeline/probe.h"
#include "pipeline/settled.h"
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

std::string berth_dir_for(const std::string& pipeline_path) {
  fs::path p = fs::absolute(pipeline_path).parent_path();
  return (p / ".berth").string();
}

Result<nlohmann::json> read_run_report(const std::string& path) {
  BERTH_TRY(std::string text, files::read_file(path));
  if (str::json_deeper_than(text, kMaxReportDepth)) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: not a run report (nested more than {} levels deep)", path,
                            kMaxReportDepth));
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return fail(Errc::kInvalidInput, path + ": not a run report");
  }
  return j;
}

Result<nlohmann::json> last_run_report(const std::string& pipeline_path) {
  return read_run_report(berth_dir_for(pipeline_path) + "/last-run.json");
}

namespace {

std::string platform() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return fmt::format("{} {} {}", u.sysname, u.release, u.machine);
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
  if (str::json_deeper_than(*text, kMaxReportDepth)) return out;
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
// size fits a row. The steps are `steps_object` when it is already stored — with
// `steps_changed`, the run's entries that differ from that object's entry of the same
// name — else `steps()` is stored. Returns the steps' object name.
Result<std::string> store_report(const RunReport& r, std::string steps_object,
                                 const std::function<Result<std::string_view>()>& steps,
                                 std::optional<size_t> settled_steps, store::ObjectStore& shared,
                                 std::vector<std::string_view> steps_changed = {}) {
  bool present = false;
  if (!steps_object.empty()) {
    auto has = shared.has_object(steps_object);
    present = has.ok() && *has;
  }
  if (!present) {
    BERTH_TRY(std::string_view bytes, steps());
    BERTH_TRY(steps_object, shared.put_object(bytes));
    steps_changed.clear();
  }
  auto addr = store::row_address(
      "runs", fmt::format("{}-{}{}", r.started, r.worker.empty() ? "" : r.worker + "-", getpid()));
  BERTH_CHECK(
      shared.put_row(addr, report_json(r, steps_object, true, settled_steps, steps_changed)));
  return steps_object;
}

// Writes bytes [from, to) of the file `in` to `out` where it stands, by the kernel
// (sendfile), falling back to read and write where sendfile cannot.
Result<void> send_file(int in, int out, size_t from, size_t to, const std::string& what) {
  auto off = static_cast<off_t>(from);
  const size_t n = to;
  while (static_cast<size_t>(off) < n) {
    ssize_t k = ::sendfile(out, in, &off, n - static_cast<size_t>(off));
    if (k > 0) continue;
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) return fail(Errc::kIo, what + ": ended early");
    if (errno != EINVAL && errno != ENOSYS) return files::os_error(what, "sendfile", errno);
    char buf[1 << 16];
    while (static_cast<size_t>(off) < n) {
      ssize_t got = ::pread(in, buf, std::min(sizeof buf, n - static_cast<size_t>(off)), off);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return fail(Errc::kIo, what + ": ended early");
      BERTH_CHECK(files::write_all(out, buf, static_cast<size_t>(got), what));
      off += got;
    }
  }
  return Ok{};
}

// head, then the steps file (`object_bytes` long) with `overrides` in place, then the
// report's tail, to `out`.
Result<void> write_report_to(int out, std::string_view head, int steps_fd, size_t object_bytes,
                             const std::vector<SettledOverride>& overrides,
                             const std::string& what) {
  BERTH_CHECK(files::write_all(out, head.data(), head.size(), what));
  size_t pos = 0;
  for (const auto& v : overrides) {
    BERTH_CHECK(send_file(steps_fd, out, pos, v.offset, what));
    BERTH_CHECK(files::write_all(out, v.entry.data(), v.entry.size(), what));
    pos = v.offset + v.length;
  }
  BERTH_CHECK(send_file(steps_fd, out, pos, object_bytes, what));
  return files::write_all(out, kReportTail.data(), kReportTail.size(), what);
}

// The same, to `path`, atomically (a temporary file renamed over it), not fsynced, as
// an ordinary run's report is written.
Result<void> write_report_file(const std::string& path, std::string_view head, int steps_fd,
                               size_t object_bytes, const std::vector<SettledOverride>& overrides) {
  std::string tmp;
  BERTH_TRY(files::Fd fd, files::create_temp(files::parent_dir(path), 0644, &tmp));
  files::TempGuard guard{tmp};
  BERTH_CHECK(write_report_to(fd.get(), head, steps_fd, object_bytes, overrides, tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return files::os_error(path, "rename onto", errno);
  guard.disarm();
  return Ok{};
}

// head, steps and the report's tail, to `out`.
Result<void> write_pieces_to(int out, std::string_view head, std::string_view steps,
                             const std::string& what) {
  BERTH_CHECK(files::write_all(out, head.data(), head.size(), what));
  BERTH_CHECK(files::write_all(out, steps.data(), steps.size(), what));
  return files::write_all(out, kReportTail.data(), kReportTail.size(), what);
}

// The same, to `path`, atomically, not fsynced (the runs row is the durable record).
Result<void> write_pieces_file(const std::string& path, std::string_view head,
                               std::string_view steps) {
  std::string tmp;
  BERTH_TRY(files::Fd fd, files::create_temp(files::parent_dir(path), 0644, &tmp));
  files::TempGuard guard{tmp};
  BERTH_CHECK(write_pieces_to(fd.get(), head, steps, tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return files::os_error(path, "rename onto", errno);
  guard.disarm();
  return Ok{};
}

}  // namespace

std::string RunOutcome::ordinary_report_json() const {
  // A dry run's is made only now that it is asked for (publish()).
  if (report_head.empty() && report) return pipeline::report_json(*report);
  std::string spliced;
  if (report_object) {
    // Overrides publish() made against the object: they lie in it, in order.
    if (auto made = splice_overrides(*report_object, report_overrides); made.ok()) {
      spliced = std::move(*made);
    }
  }
  const std::string& s = report_object ? spliced : report_steps;
  std::string out;
  out.reserve(report_head.size() + s.size() + kReportTail.size());
  out.append(report_head).append(s).append(kReportTail);
  return out;
}

Result<void> RunOutcome::write_report(int fd) const {
  // A dry run's report, made now; an edit's rerun's, spliced from its object.
  if (!settled && (report_object || (report_head.empty() && report))) {
    std::string text = ordinary_report_json();
    return files::write_all(fd, text.data(), text.size(), "stdout");
  }
  if (!settled) return write_pieces_to(fd, report_head, report_steps, "stdout");
  files::Fd steps_fd(::open(steps_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!steps_fd.valid()) return files::os_error(steps_path, "open", errno);
  return write_report_to(fd, settled_head, steps_fd.get(), steps_bytes, overrides, "stdout");
}

// How many bytes of executed steps' entries a run's row carries in place of its own
// steps object (store_report()); past this, the steps are stored whole.
constexpr size_t kMaxStepsChangedBytes = 256 * 1024;
// How many bytes of entries a settled record carries as overrides of its steps object
// (and at most half the object's) before the next run that records keeps the steps as
// an object of their own.
constexpr size_t kMaxOverrideBytes = 64 * 1024;

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
  std::string results_dir;
  std::string abs_results;
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
  // next record's overrides are made against them (publish()).
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
  std::unique_ptr<store::ObjectStore> store;
  store::ObjectStore* shared = nullptr;
  store::PatientStore* patient = nullptr;  // the shared store, waiting out its outages
  std::unique_ptr<Leases> leases;

  State(SessionOptions opts, SessionPlace pl, const Env& e, SessionSinks s)
      : o(std::move(opts)), place(std::move(pl)), env(e), sinks(std::move(s)) {}
  void say(const std::string& m) const {
    if (sinks.say) sinks.say(m);
  }
  const Clock& clock() const { return o.clock != nullptr ? *o.clock : Clock::real(); }
  std::string context() const {
    return settled_context(o.engine_version, cwd, settled_name, text, url, abs_results);
  }
  std::string base() const {
    return settled_base(o.engine_version, cwd, settled_name, url, abs_results);
  }
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
  // By table of `file`, from `text`: 1 where its bytes are the record's (same_tables).
  std::vector<char> tables_as_recorded(const PipelineFile& file) const;
  // By table, 1 where its bytes (at `now` in `text`, after a head of `head` bytes) are
  // not the record's, or it is past the record's last; nullopt when the two versions do
  // not split alike (another head, a record whose own file does not split as it says).
  std::optional<std::vector<char>> changed_tables(size_t head,
                                                  const std::vector<TableSpan>& now) const;
  place::VersionProbe& probe(std::optional<CaptureProbe>& own) {
    if (place.probe != nullptr) return *place.probe;
    own.emplace(env);
    return *own;
  }
  // A run answered from its settled record, when every fact of the record holds
  // (`check`) and its steps file is whole; nullopt otherwise.
  std::optional<RunOutcome> run_settled();
  // The entries a rerun of the settled record reports (in its steps object, or its
  // overrides), for an ordinary run to reuse; null when the object's file is missing or
  // not the record's length. Keeps the object's bytes in `previous_object`.
  std::shared_ptr<const RecordedEntries> recorded_steps();
  // The ordinary run's report: written, stored, and the settled record kept or dropped.
  void publish(RunReport& rep, const RunOptions& ro, RunOutcome& out);
  // Stores `steps` and keeps them in the cache as the file a settled record names
  // (settled_steps_path()), written once: the store is handed that very file, which a
  // file store on this filesystem (or a worker's local tier) links as its copy, so
  // that megabytes are not written and made durable twice. Returns the object's name
  // and the file.
  Result<std::pair<std::string, std::string>> keep_settled_steps(std::string_view steps);
  // The overrides that make the steps object of the record found into `steps` (entries
  // at `at`, for the steps of `rec`), with where the object's entries lie in
  // `object_spans`; nullopt when the object is not this run's to keep: no record read,
  // other steps, or more differences than kMaxOverrideBytes or half the object.
  std::optional<std::vector<SettledOverride>> overrides_for(const Settled& rec,
                                                            std::string_view steps,
                                                            const EntrySpans& at,
                                                            EntrySpans& object_spans) const;
  // An edit's rerun set against the last record's object, entry by entry (publish()).
  struct Spliced {
    std::vector<SettledOverride> report;  // the report's entries that differ from the object
    std::vector<SettledOverride> rerun;   // those of the steps a rerun reports
    EntrySpans at;                        // each entry in the steps a rerun reports
    size_t rerun_bytes = 0;               // how long those steps are
  };
  // nullopt when `rep` is not the last record's steps in its order, when the steps a
  // rerun reports would differ from its object by more than kMaxOverrideBytes (or half
  // the object), or when the object is not laid out as berth writes steps.
  std::optional<Spliced> splice_on_object(const RunReport& rep) const;
  // The record of `rep` (with RunOptions::record_settled): its entries at `at` in the
  // steps a rerun reports (`steps_bytes` long), the object `kept_steps` names (its file)
  // `object_bytes` long with `overrides`; written and remembered by the index, unless
  // no steps were kept. The previous record and its steps file go unless they are it.
  void keep_record(RunReport& rep, std::optional<std::pair<std::string, std::string>> kept_steps,
                   const EntrySpans& at, size_t steps_bytes, size_t object_bytes,
                   std::vector<SettledOverride> overrides);
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

std::optional<std::vector<char>> Session::State::changed_tables(
    size_t head, const std::vector<TableSpan>& now) const {
  // Both versions split alike: the same head, the record's as many tables as it says.
  auto old_text = same ? std::optional<std::string_view>(text)
                       : settled_context_pipeline(settled->context);
  auto old = old_text ? split_step_tables(*old_text) : std::nullopt;
  if (!old || old->tables.size() != settled->tables ||
      old_text->substr(0, old->head) != std::string_view(text).substr(0, head)) {
    return std::nullopt;
  }
  // A table past the record's last is new: changed.
  std::vector<char> changed(now.size(), 1);
  for (size_t k = 0; k < now.size() && k < old->tables.size(); ++k) {
    const TableSpan& was = old->tables[k];
    changed[k] = !same && old_text->substr(was.offset, was.length) !=
                              std::string_view(text).substr(now[k].offset, now[k].length);
  }
  return changed;
}

std::vector<char> Session::State::tables_as_recorded(const PipelineFile& file) const {
  // Both versions of the file read table by table, and the same head: table k's steps
  // are what they were when its bytes are. Not a table whose foreach values are found
  // among the files present: the same bytes may expand to other steps.
  if (settled->tables == 0 || file.tables.empty()) return {};
  auto changed = changed_tables(file.tables[0].offset, file.tables);
  if (!changed) return {};
  std::vector<char> as_recorded(file.tables.size(), 0);
  for (size_t k = 0; k < as_recorded.size(); ++k) {
    as_recorded[k] = file.steps[k].foreach_globs.empty() && !(*changed)[k];
  }
  return as_recorded;
}

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
  if (settled && !same) same_tables = tables_as_recorded(file);
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

// At most this many of a file's tables are read alone after an edit (load_tables());
// an edit of more is read whole.
constexpr size_t kMostTablesReadAgain = 256;

bool Session::State::decode_entries() {
  if (!entries_decoded) {
    entries_decoded = decode_settled_entries(*record_bytes, entries_at, *settled).ok();
  }
  return entries_decoded;
}

bool Session::State::load_tables(const std::vector<char>* fresh) {
  if (!settled || same != (fresh != nullptr) || !may_settle || settled->tables == 0) {
    return false;
  }
  // Which tables changed (none, with the record's own bytes).
  auto now = split_step_tables(text);
  auto changed = now ? changed_tables(now->head, now->tables) : std::nullopt;
  if (!changed || now->tables.size() != settled->tables) return false;
  const size_t n = now->tables.size();
  std::vector<char> again = std::move(*changed);  // read alone again, every step of it
  std::vector<char> read(n, 0);  // read alone again, for some of its steps or all
  std::vector<size_t> which;
  // A table that finds its values among the files may expand otherwise from the same
  // bytes: it is always read again.
  for (uint32_t k : settled->globbed) again[k] = 1;
  if (!decode_entries()) return false;
  if (!recorded) recorded = recorded_steps();
  const auto& entries = settled->entries;
  if (!recorded || recorded->text.size() != entries.size()) return false;
  if (fresh && fresh->size() != entries.size()) return false;
  // The steps made afresh: every step of a table read again whole, and those asked for.
  std::vector<char> made(entries.size(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].table >= n) return false;
    made[i] = again[entries[i].table] || (fresh && (*fresh)[i]);
    if (made[i]) read[entries[i].table] = 1;
  }
  for (size_t k = 0; k < n; ++k) {
    if (read[k]) which.push_back(k);
  }
  if (which.empty() || which.size() > kMostTablesReadAgain) return false;
  // The record's steps by name; which of them the tables read again expand to.
  std::unordered_map<std::string_view, size_t> at;
  at.reserve(entries.size());
  size_t expected = 0;
  std::set<std::pair<size_t, uint32_t>> wanted;  // a table's combinations made afresh
  for (size_t i = 0; i < entries.size(); ++i) {
    at.emplace(entries[i].name, i);
    if (!made[i]) continue;
    ++expected;
    if (!again[entries[i].table]) wanted.emplace(entries[i].table, entries[i].combination);
  }
  std::shared_ptr<const void> kept;
  auto part = read_step_tables(text, o.pipeline, *now, which, kept);
  if (!part) return false;
  auto found = discover_foreach(*part, DiscoveryFs::real());
  if (!found.ok()) return false;
  Graph g;
  g.path = part->path;
  g.dir = part->dir;
  g.name = part->name;
  g.tools = part->tools;
  std::vector<uint32_t> globs;
  for (const StepSpec& spec : part->steps) {
    if (spec.finds_values_in_files()) globs.push_back(static_cast<uint32_t>(spec.index));
  }
  GraphPlaces places;
  places.index_of = [&at](std::string_view name) -> std::optional<size_t> {
    auto it = at.find(name);
    if (it == at.end()) return std::nullopt;
    return it->second;
  };
  // A step not read again is reused; its outputs are what its entry says.
  const RecordedEntries& texts = *recorded;
  places.outputs_of = [&texts](size_t i) {
    std::vector<std::string> names;
    auto j = nlohmann::json::parse(texts.text[i], nullptr, false);
    if (j.is_object() && j.contains("outputs") && j["outputs"].is_object()) {
      for (const auto& item : j["outputs"].items()) names.push_back(item.key());
    }
    return names;
  };
  // Of a table read for some of its steps, only theirs.
  std::function<bool(size_t, uint32_t)> only = [&again, &wanted](size_t table, uint32_t c) {
    return again[table] || wanted.count({table, c}) > 0;
  };
  auto expanded = expand_tables(std::move(*part), files::exists, places, &only);
  if (!expanded.ok() || expanded->size() != expected) return false;
  // Each step of a table read again takes its own entry's place: the same name, table
  // and foreach combination, reading from the same steps (so the graph is the one
  // reading the whole file gives, in the same order); each other step reads nothing
  // that was read again.
  std::vector<Step*> placed(entries.size(), nullptr);
  for (Step& st : *expanded) {
    auto it = at.find(st.name);
    if (it == at.end() || placed[it->second] != nullptr) return false;
    const SettledStep& e = entries[it->second];
    if (e.table != st.spec || e.combination != st.combination ||
        !std::equal(st.deps.begin(), st.deps.end(), e.deps.begin(), e.deps.end())) {
      return false;
    }
    placed[it->second] = &st;
  }
  g.steps.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (placed[i] != nullptr) {
      g.steps.push_back(std::move(*placed[i]));
      continue;
    }
    const SettledStep& e = entries[i];
    for (uint32_t d : e.deps) {
      if (made[d]) return false;
    }
    Step& st = g.steps.emplace_back();
    st.name = e.name;
    st.spec = e.table;
    st.combination = e.combination;
    st.deps.assign(e.deps.begin(), e.deps.end());
    st.from_record = true;
  }
  graph = std::move(g);
  from_tables = true;
  tables_again = which.size();
  tables = n;
  globbed = std::move(globs);
  discovered = std::move(*found);
  same_tables.assign(n, 0);
  for (size_t k = 0; k < n; ++k) same_tables[k] = !again[k];
  if (o.process_exits) document = std::move(kept);
  return true;
}

bool Session::State::load_fresh() {
  // Every request still fitting: a step taken from its entry is not checked against the
  // pool, which reading the whole file would refuse the run for.
  if (!same || !check || !check->tools_same || !check->requests_fit || !decode_entries()) {
    return false;
  }
  const auto& entries = settled->entries;
  std::vector<char> fresh(entries.size(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const SettledStep& e = entries[i];
    fresh[i] = !check->holds(e);
    // What reads a step made afresh is keyed again: made afresh too (deps come first).
    for (uint32_t d : e.deps) fresh[i] |= fresh[d];
  }
  return load_tables(&fresh);
}

bool Session::State::tables_hold() const {
  if (!recorded || !check || !check->tools_same || !check->requests_fit) return false;
  for (const Step& st : graph->steps) {
    if (!st.from_record) continue;
    if (!check->holds(settled->entries[&st - graph->steps.data()])) return false;
  }
  return true;
}

Result<std::unique_ptr<Session>> Session::open(SessionOptions options, SessionPlace place,
                                               const Env& env, SessionSinks sinks) {
  auto st = std::make_unique<State>(std::move(options), std::move(place), env, std::move(sinks));
  State& s = *st;
  const SessionOptions& o = s.o;

  // 1. The pipeline file, expanded and checked before anything runs; unless the last
  // run of these very bytes settled, when parsing waits until the record turns out not
  // to hold.
  BERTH_TRY(s.text, files::read_file(o.pipeline));
  s.bdir = berth_dir_for(o.pipeline);
  s.settled_name = fs::absolute(o.pipeline).lexically_normal().string();
  s.url = o.store.empty() ? "file://" + s.bdir + "/store" : o.store;
  s.results_dir =
      o.results.empty() ? (fs::path(s.bdir).parent_path() / "results").string() : o.results;
  s.cwd = fs::current_path().string();
  s.abs_results = fs::absolute(s.results_dir).lexically_normal().string();
  s.may_settle = !o.dry_run && !o.worker && o.targets.empty() && o.config.empty();
  if (s.may_settle) {
    std::string cache_dir = o.cache.empty() ? s.bdir + "/cache" : fs::absolute(o.cache).string();
    std::string ix = cache_dir + "/index.sqlite";
    if (files::exists(ix)) {
      if (auto opened = Index::open(ix); opened.ok()) s.index = std::move(*opened);
    }
    if (s.index && s.index->rebuilt_reason().empty()) {
      // The index names the record's file; a file of another length, or one that does
      // not decode, is no record.
      auto where = s.index->settled(s.settled_name);
      auto ptr = where ? read_settled_pointer(*where) : std::nullopt;
      // Mapped, not read (megabytes for 10^4 steps): records are replaced whole.
      auto bytes = ptr ? files::map_file(ptr->first, ptr->second)
                       : Result<files::SharedBytes>(fail(Errc::kNotFound, "no record"));
      if (bytes.ok()) {
        s.previous_record = ptr->first;
        // Its steps' entries are read only if the record does not hold as a whole.
        auto rec = decode_settled(**bytes, false, &s.entries_at);
        if (rec.ok()) s.record_bytes = std::move(*bytes);
        if (rec.ok()) {
          s.previous_steps = settled_steps_path(cache_dir, rec->steps_object);
          if (rec->context == s.context()) {
            s.settled = std::move(*rec);
            s.same = true;
          } else if (rec->base == s.base()) {
            s.settled = std::move(*rec);  // another version of the file: reuse by fingerprint
          }
        }
      }
    }
  }
  // An edit of a few tables of a settled pipeline: those tables alone.
  if (!s.same && !s.load_tables()) BERTH_CHECK(s.load_graph());

  // 2. Worker mode is refused before anything runs when it could not divide anything.
  if (o.worker) {
    if (o.worker->empty()) {
      s.worker = generate_worker_name(s.clock(), getpid());
    } else {
      auto name = check_worker_name(*o.worker);
      if (!name.ok()) return name.error().with_context("--worker");
      s.worker = *name;
    }
    if (o.store.empty()) {
      return fail(Errc::kInvalidInput,
                  "--worker needs a shared store: give --store URL (a file:// directory every "
                  "worker can reach, or s3://bucket/prefix); a worker without one has nobody to "
                  "divide the work with and would compute the whole pipeline alone");
    }
    BERTH_TRY(s.lease, parse_duration(o.lease, "--lease"));
  }

  // 3. The pool. A worker places steps on its own node only: the other nodes have
  // workers of their own (srun -N 4 berth run ... --worker starts one on each). Every
  // node a step may be placed on can be reached from here, or nothing runs: a step
  // must never run on this node under another's name (spec 02 §7).
  std::vector<place::PoolNode> nodes = s.place.nodes;
  if (o.worker && !s.place.host.empty()) {
    std::erase_if(nodes, [&](const place::PoolNode& n) { return n.name != s.place.host; });
  }
  if (s.place.launcher != nullptr) {
    for (const auto& n : nodes) {
      if (std::string why = place::unreachable(*s.place.launcher, n.name, s.place.host);
          !why.empty()) {
        return fail(Errc::kRefused, why);
      }
    }
  }
  s.pool.emplace(nodes);

  // 4. The cache directory: this machine's index, staging area and (for a worker) its
  // local object tier. One per worker by default: never one SQLite file shared over a
  // network filesystem. An explicit --cache for a worker is guarded by a lock file.
  s.cache = !o.cache.empty() ? fs::absolute(o.cache).string()
            : o.worker       ? s.bdir + "/cache/workers/" + s.worker
                             : s.bdir + "/cache";
  std::error_code ec;
  fs::create_directories(s.cache, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot create {}: {}", s.cache, ec.message()));
  if (o.worker && !o.cache.empty()) {
    auto l = CacheLock::acquire(s.cache, s.worker, s.place.host, s.clock());
    if (!l.ok()) return l.error().with_context("--cache");
    s.lock.emplace(std::move(*l));
  }

  // 5. The store: a worker reads and writes objects through a local tier, and always
  // asks the shared store about rows and leases.
  auto parsed = store::parse_store_url(s.url, s.cwd);
  if (!parsed.ok()) return parsed.error().with_context("--store");
  auto opened = store::open_store(*parsed, env);
  if (!opened.ok()) return opened.error().with_context("--store");
  // Every operation on the shared store waits out an outage of up to --store-patience
  // (spec 05 §9): an object store or parallel filesystem pausing is ordinary.
  store::Patience patience;
  BERTH_TRY(patience.patience, parse_duration(o.store_patience, "--store-patience"));
  State* sp = &s;
  patience.on_wait = [sp](const std::string& name, const Error& e) {
    sp->say(fmt::format("the store {} is not answering ({}); waiting up to {} for it "
                        "(--store-patience)",
                        name, e.message(), sp->o.store_patience));
  };
  patience.on_back = [sp](const std::string& name, std::chrono::milliseconds away) {
    sp->say(fmt::format("the store {} answered again after {:.1f} s", name,
                        static_cast<double>(away.count()) / 1000.0));
  };
  auto patient =
      std::make_unique<store::PatientStore>(std::move(*opened), std::move(patience), s.clock());
  s.patient = patient.get();
  s.store = std::move(patient);
  s.shared = s.store.get();
  if (o.worker) {
    auto local = store::FileStore::open(s.cache + "/objects");
    if (!local.ok()) return local.error().with_context("the worker's local tier");
    auto tiered = std::make_unique<store::TieredStore>(std::move(*local), std::move(s.store));
    s.shared = &tiered->shared();
    s.store = std::move(tiered);
  }
  for (const auto& n : s.store->notices()) s.say(n);
  s.report_path = (o.worker || !o.cache.empty() ? s.cache : s.bdir) + "/last-run.json";
  if (o.worker) {
    s.leases =
        std::make_unique<Leases>(*s.shared, s.worker, Leases::new_token(), s.clock(), s.lease);
  }
  fs::create_directories(s.cache + "/staging", ec);
  // This machine's index of what it knows; disposable, rebuilt from the store.
  bool fresh_index = false;
  if (!s.index) {
    fresh_index = !files::exists(s.cache + "/index.sqlite");
    if (auto ix = Index::open(s.cache + "/index.sqlite"); ix.ok()) {
      s.index = std::move(*ix);
    } else {
      s.say("running without the local index: " + ix.error().message());
    }
  }
  if (s.index && !s.index->rebuilt_reason().empty()) {
    s.say("the local index was rebuilt: " + s.index->rebuilt_reason());
    fresh_index = true;
  }
  // A new or rebuilt index names no settled record: the files of any left beside it
  // are no one's now (spec 04 §7.1), and go.
  if (s.index && fresh_index) fs::remove_all(s.cache + "/settled", ec);
  return std::unique_ptr<Session>(new Session(std::move(st)));
}

std::shared_ptr<const RecordedEntries> Session::State::recorded_steps() {
  if (previous_steps.empty()) return nullptr;
  // Mapped, not read: 7 MB for 10^4 steps, looked at where it lies in the page cache.
  auto bytes = files::map_file(previous_steps, settled->object_bytes);
  if (!bytes.ok()) return nullptr;
  previous_object = std::move(*bytes);
  return recorded_entries(*settled, previous_object);
}

std::optional<RunOutcome> Session::State::run_settled() {
  auto t0 = clock().steady();
  std::string started = utc_text(clock().wall());
  const std::string& steps_path = previous_steps;
  if (steps_path.empty()) return std::nullopt;
  files::Fd steps(::open(steps_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!steps.valid()) return std::nullopt;
  const int steps_fd = steps.get();
  struct stat sb {};
  if (::fstat(steps_fd, &sb) != 0 || static_cast<size_t>(sb.st_size) != settled->object_bytes) {
    return std::nullopt;
  }
  RunReport header;
  header.pipeline = settled->pipeline;
  header.store = store->describe();
  header.started = started;
  header.notices = store->notices();
  // A steps file whose bytes are not the object's is not used: checked when the object
  // must be stored again, before anything is written.
  std::string steps_object = settled->steps_object;
  if (auto has = shared->has_object(steps_object); !has.ok() || !*has) {
    auto bytes = files::read_file(steps_path, settled->object_bytes + 1);
    auto name = bytes.ok() ? shared->put_object(*bytes) : Result<std::string>(bytes.error());
    if (name.ok() && *name != steps_object) return std::nullopt;
    if (!name.ok()) steps_object.clear();
  }
  // Racy inputs whose bytes the check read again, and which are no longer racy: from
  // now on their stamps are proof, and the record says so.
  if (check->racy_verified > 0 && settle_racy_inputs(*settled, check_ns) &&
      decode_settled_entries(*record_bytes, entries_at, *settled).ok()) {
    std::string bytes = encode_settled(*settled);
    if (files::write_file_atomic(previous_record, bytes, false).ok()) {
      index->remember_settled(settled_name, settled_pointer(previous_record, bytes.size()));
    }
  }
  header.elapsed_s = std::chrono::duration<double>(clock().steady() - t0).count();
  RunOutcome out;
  out.settled = true;
  out.settled_head = report_json_head(header, settled->steps);
  out.steps_path = steps_path;
  out.steps_bytes = settled->object_bytes;
  out.overrides = settled->overrides;
  out.steps = settled->steps;
  out.elapsed_s = header.elapsed_s;
  if (auto w = write_report_file(report_path, out.settled_head, steps_fd, out.steps_bytes,
                                 out.overrides);
      !w.ok()) {
    say(w.error().message());
  }
  // The row names the object and carries the entries that differ from it.
  std::vector<std::string_view> changed;
  for (const auto& v : settled->overrides) changed.push_back(v.entry);
  auto stored = store_report(
      header, steps_object,
      [&]() -> Result<std::string_view> { return fail(Errc::kIo, "the steps' object is missing"); },
      settled->steps, *shared, std::move(changed));
  if (!stored.ok()) say("the run's report was not stored: " + stored.error().message());
  return out;
}

Result<std::pair<std::string, std::string>> Session::State::keep_settled_steps(
    std::string_view steps) {
  std::string dir = cache + "/settled";
  std::error_code mk;
  fs::create_directories(dir, mk);
  if (mk) return files::os_error(dir, "mkdir", mk.value());
  std::string tmp;
  BERTH_TRY(files::Fd fd, files::create_temp(dir, 0644, &tmp));
  files::TempGuard guard{tmp};
  BERTH_CHECK(files::write_all(fd.get(), steps.data(), steps.size(), tmp));
  BERTH_TRY(std::string name, shared->adopt_object_file(tmp));
  // Linked as the store's copy, this file is made durable as the store makes its
  // objects (publish() stores the run's row after it). The store took a copy instead
  // (another filesystem, a remote store, the object there already): this one is made
  // durable on its own, as a record's steps must be whole when the record is.
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_nlink < 2) BERTH_CHECK(files::fsync_fd(fd.get(), tmp));
  fd.reset();
  std::string path = settled_steps_path(cache, name);
  if (path.empty()) return fail(Errc::kIo, "the store named the settled steps " + name);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return files::os_error(path, "rename onto", errno);
  guard.disarm();
  return std::make_pair(std::move(name), std::move(path));
}

std::optional<std::vector<SettledOverride>> Session::State::overrides_for(
    const Settled& rec, std::string_view steps, const EntrySpans& at,
    EntrySpans& object_spans) const {
  if (!settled || !previous_object || previous_steps.empty()) return std::nullopt;
  const Settled& last = *settled;
  if (last.entries.size() != rec.entries.size()) return std::nullopt;
  for (size_t i = 0; i < rec.entries.size(); ++i) {
    if (last.entries[i].name != rec.entries[i].name) return std::nullopt;
  }
  auto spans = settled_object_spans(last);
  if (!spans) return std::nullopt;
  // Overrides are worth keeping while they are a small part of the steps.
  size_t most = std::min(kMaxOverrideBytes, previous_object->size() / 2);
  auto made = settled_overrides(*previous_object, *spans, steps, at, most);
  if (made) object_spans = std::move(*spans);
  return made;
}

std::optional<Session::State::Spliced> Session::State::splice_on_object(
    const RunReport& rep) const {
  if (!settled || !previous_object || previous_steps.empty() || !rep.settled) return std::nullopt;
  const Settled& last = *settled;
  std::string_view object = *previous_object;
  const size_t n = rep.steps.size();
  if (n == 0 || last.entries.size() != n || rep.settled->entries.size() != n) return std::nullopt;
  auto spans = settled_object_spans(last);
  if (!spans) return std::nullopt;
  // The object is "[" entry ("," entry)* "]", as every steps text berth writes: the
  // steps made from it by overrides keep that layout, and entry i lies where it did.
  size_t expect = 1;
  for (size_t i = 0; i < n; ++i) {
    const auto& [oo, ol] = (*spans)[i];
    if (oo != expect || object[oo - 1] != (i == 0 ? '[' : ',')) return std::nullopt;
    expect = oo + ol + 1;
  }
  if (expect != object.size() || object.back() != ']') return std::nullopt;
  const size_t most = std::min(kMaxOverrideBytes, object.size() / 2);
  Spliced sp;
  sp.at.reserve(n);
  size_t pos = 1, rerun_overrides = 0;
  for (size_t i = 0; i < n; ++i) {
    const StepRecord& r = rep.steps[i];
    if (r.name != last.entries[i].name || rep.settled->entries[i].name != r.name) {
      return std::nullopt;
    }
    const auto& [oo, ol] = (*spans)[i];
    std::string_view theirs(object.data() + oo, ol);
    std::string fresh_report, fresh_rerun;
    std::string_view report_entry, rerun_entry;
    bool report_same = false, rerun_same = false;
    if (!r.recorded.empty()) {
      // Reused: the same text in the report and for a rerun. An entry that is the
      // object's own bytes (recorded_entries()) is the object's without a comparison.
      report_entry = rerun_entry = r.recorded;
      report_same = r.recorded.data() == theirs.data() && r.recorded.size() == theirs.size();
      if (!report_same) report_same = r.recorded == theirs;
      rerun_same = report_same;
    } else {
      fresh_report = step_entry_json(r, false);
      fresh_rerun = step_entry_json(r, true);
      report_entry = fresh_report;
      rerun_entry = fresh_rerun;
      report_same = report_entry == theirs;
      rerun_same = rerun_entry == theirs;
    }
    if (!rerun_same) {
      rerun_overrides += rerun_entry.size();
      if (rerun_overrides > most) return std::nullopt;
      sp.rerun.push_back({oo, ol, std::string(rerun_entry)});
    }
    if (!report_same) sp.report.push_back({oo, ol, std::string(report_entry)});
    sp.at.emplace_back(pos, rerun_entry.size());
    pos += rerun_entry.size() + 1;
  }
  sp.rerun_bytes = pos;
  return sp;
}

void Session::State::publish(RunReport& rep, const RunOptions& ro, RunOutcome& out) {
  // A dry run's report is neither kept nor stored, and records nothing: its JSON,
  // megabytes for 10^5 steps, is made only if it is printed (write_report()).
  if (o.dry_run) return;
  out.report_head = report_json_head(rep);
  // A record is kept of a run whose every step is in it; with it, beside the index, the
  // steps a rerun reports: this run's own when none executed, else the same with the
  // executed ones reported cached.
  bool record =
      ro.record_settled && rep.settled && rep.settled->entries.size() == rep.steps.size();
  bool executed = rep.count(StepState::kExecuted) > 0;
  // An edit's rerun: the steps of the last record, a few executed again. Its report and
  // the steps a rerun reports are that record's object with a few entries in place,
  // each entry taken as it is or written afresh, set against the object's entry of the
  // same step: no steps text is made whole.
  if (record && executed) {
    if (auto sp = splice_on_object(rep)) {
      out.report_object = previous_object;
      out.report_overrides = std::move(sp->report);
      // The run's row first: its barrier (a syncfs, in a file:// store) then has only
      // what came before to flush, not the megabytes of the report being written.
      Result<void> report_written = Ok{};
      {
        std::vector<std::string_view> changed;
        size_t bytes = 0;
        for (const auto& v : out.report_overrides) {
          changed.push_back(v.entry);
          bytes += v.entry.size();
        }
        bool fits = bytes <= kMaxStepsChangedBytes;
        if (!fits) changed.clear();
        std::string whole;  // the report's steps, made only if they are stored whole
        auto stored = store_report(
            rep, fits ? settled->steps_object : "",
            [&]() -> Result<std::string_view> {
              BERTH_TRY(whole, splice_overrides(*previous_object, out.report_overrides));
              return std::string_view(whole);
            },
            std::nullopt, *shared, std::move(changed));
        if (!stored.ok()) say("the run's report was not stored: " + stored.error().message());
        // The report: the object's file sent by the kernel around the entries that
        // differ (replaced atomically, not fsynced), on a thread of its own while the
        // record is kept. The file is opened here: keep_record() removes it when no
        // record is kept.
        files::Fd steps_fd(::open(previous_steps.c_str(), O_RDONLY | O_CLOEXEC));
        int open_errno = errno;
        std::jthread report_writer([&] {
          report_written = steps_fd.valid()
                               ? write_report_file(report_path, out.report_head, steps_fd.get(),
                                                   previous_object->size(), out.report_overrides)
                               : files::os_error(previous_steps, "open", open_errno);
        });
        keep_record(rep, stored.ok() ? std::make_optional(std::make_pair(settled->steps_object,
                                                                         previous_steps))
                                     : std::nullopt,
                    sp->at, sp->rerun_bytes, previous_object->size(), std::move(sp->rerun));
        report_writer.join();
        if (!report_written.ok()) say(report_written.error().message());
      }
      return;
    }
  }
  // The steps are written once, a reused step's entry copied as it was recorded; where
  // each entry lies is kept, so the steps a rerun reports are spliced from these.
  EntrySpans spans;
  out.report_steps = report_steps_json(rep, &spans);
  const std::string& steps_json = out.report_steps;
  // Beside the pipeline (replaced atomically, not fsynced: the runs row is the durable
  // record, and in a file:// store on the same filesystem the row's own barrier makes
  // the file durable with it), on a thread of its own while the steps a rerun reports
  // are made and kept below (megabytes more when they become an object of their own).
  Result<void> report_written = Ok{};
  std::jthread report_writer([&] {
    report_written = write_pieces_file(report_path, out.report_head, steps_json);
  });
  std::string rerun_steps;
  EntrySpans rerun_spans;
  if (record && executed) rerun_steps = settled_steps_json(rep, steps_json, spans, &rerun_spans);
  const std::string& steps = executed ? rerun_steps : steps_json;
  const EntrySpans& at = executed ? rerun_spans : spans;
  // The steps a rerun reports are kept as the last record's object with overrides when
  // they differ from it in a few entries; else as an object of their own, written once
  // and kept before the report is stored: when they are the report's own steps,
  // storing the report finds them stored; and the run's row, written after, makes them
  // durable with everything else the store holds (spec 05 §4).
  std::optional<std::pair<std::string, std::string>> kept_steps;  // object, file
  std::vector<SettledOverride> overrides;
  std::string_view object = steps;  // the kept object's bytes, its entries at object_at
  EntrySpans previous_spans;
  const EntrySpans* object_at = &at;
  if (record) {
    if (auto made = overrides_for(*rep.settled, steps, at, previous_spans)) {
      overrides = std::move(*made);
      kept_steps.emplace(settled->steps_object, previous_steps);
      object = *previous_object;
      object_at = &previous_spans;
    } else if (auto k = keep_settled_steps(steps); k.ok()) {
      kept_steps = std::move(*k);
    }
  }
  report_writer.join();
  if (!report_written.ok()) say(report_written.error().message());
  bool stored_ok = false;
  {
    // The row names the kept object and carries this run's entries that differ from
    // it (the executed steps', the overridden ones'): not another copy of megabytes
    // that differ in a few entries. Past kMaxStepsChangedBytes of them, the run's steps
    // are stored whole.
    std::vector<std::string_view> changed;
    bool fits = kept_steps.has_value();
    if (kept_steps) {
      size_t bytes = 0;
      for (size_t i = 0; i < spans.size() && fits; ++i) {
        std::string_view ours =
            std::string_view(steps_json).substr(spans[i].first, spans[i].second);
        const auto& [oo, ol] = (*object_at)[i];
        if (ours == object.substr(oo, ol)) continue;
        changed.push_back(ours);
        bytes += ours.size();
        fits = bytes <= kMaxStepsChangedBytes;
      }
      if (!fits) changed.clear();
    }
    auto stored = store_report(
        rep, fits ? kept_steps->first : "",
        [&]() -> Result<std::string_view> { return std::string_view(steps_json); }, std::nullopt,
        *shared, std::move(changed));
    if (stored.ok()) {
      stored_ok = true;
    } else {
      say("the run's report was not stored: " + stored.error().message());
    }
  }
  if (!ro.record_settled) return;
  keep_record(rep, stored_ok ? kept_steps : std::nullopt, at, steps.size(), object.size(),
              std::move(overrides));
  // A steps file kept for a record that was not: gone with it (keep_record() removed
  // the previous one's).
  if (kept_steps && !stored_ok) ::unlink(kept_steps->second.c_str());
}

void Session::State::keep_record(RunReport& rep,
                                 std::optional<std::pair<std::string, std::string>> kept_steps,
                                 const EntrySpans& at, size_t steps_bytes, size_t object_bytes,
                                 std::vector<SettledOverride> overrides) {
  bool kept = false;
  std::string steps_path, record_path;
  if (kept_steps && rep.settled) {  // steps are kept only for a record
    const std::string& steps_object = kept_steps->first;
    steps_path = kept_steps->second;
    record_path = settled_record_path(cache, steps_object);
    Settled& rec = *rep.settled;
    for (size_t i = 0; i < at.size() && i < rec.entries.size(); ++i) {
      rec.entries[i].offset = at[i].first;
      rec.entries[i].length = at[i].second;
    }
    rec.steps_object = steps_object;
    rec.steps_bytes = steps_bytes;
    rec.object_bytes = object_bytes;
    rec.overrides = std::move(overrides);
    rec.context = context();
    rec.base = base();
    rec.tables = tables;
    rec.globbed = globbed;
    // Inputs reused from the old record were read again by its check if racy.
    if (check) settle_racy_inputs(rec, check_ns);
    // Not fsynced: a record torn by a crash does not decode, and costs one ordinary
    // run; the steps it names were.
    std::string bytes = encode_settled(rec);
    if (files::write_file_atomic(record_path, bytes, false).ok()) {
      index->remember_settled(settled_name, settled_pointer(record_path, bytes.size()));
      kept = true;
    }
  }
  // A steps file kept for a record that was not: gone with it.
  if (kept_steps && !kept) ::unlink(kept_steps->second.c_str());
  if (!kept) index->forget_settled(settled_name);
  if (!previous_steps.empty() && (!kept || previous_steps != steps_path)) {
    ::unlink(previous_steps.c_str());
  }
  if (!previous_record.empty() && (!kept || previous_record != record_path)) {
    ::unlink(previous_record.c_str());
  }
}

Result<RunOutcome> Session::run(int cancel_fd) {
  State& s = *s_;
  // 6. A settled pipeline whose record still holds is that run again: reported, not
  // re-derived. Otherwise the ordinary run, which records afresh.
  // When it does not hold, the run reuses the entry of every step whose own facts
  // still hold (executor.h).
  std::optional<SettledReuse> reuse;
  if (s.settled) {
    std::optional<CaptureProbe> own;
    s.check_ns = wall_ns(s.clock().wall());
    s.check = check_settled(*s.settled, s.pool->nodes(), *s.store, s.probe(own));
    if (s.same && !s.check->difference) {
      if (auto answered = s.run_settled()) return std::move(*answered);
    }
    // The record's entries, then their text (which needs where they lie).
    if (s.decode_entries() && !s.recorded) s.recorded = s.recorded_steps();
    // A graph made from the edited tables alone, whose other steps cannot all be
    // reused: the file is read whole after all.
    if (s.from_tables && !s.tables_hold()) {
      s.graph.reset();
      s.from_tables = false;
      BERTH_CHECK(s.load_graph());
    }
    // The same bytes, some facts changed: the steps that must be keyed again, alone.
    if (!s.graph && s.same && s.recorded) s.load_fresh();
    if (s.recorded) {
      reuse.emplace();
      reuse->record = &*s.settled;
      reuse->check = &*s.check;
      reuse->steps = s.recorded;
      reuse->verify_fingerprints = !s.same || !s.check->tools_same;
      if (s.check->tools_same) reuse->same_tables = std::move(s.same_tables);
      // A table that finds its foreach values among the files may expand otherwise
      // from the same bytes (one value, a name without it): its steps are reused only
      // with their recorded fingerprints, the other tables' by name as before.
      if (s.same && s.check->tools_same && !s.settled->globbed.empty()) {
        size_t tables = 0;
        for (const auto& e : s.settled->entries) tables = std::max<size_t>(tables, e.table + 1);
        reuse->verify_fingerprints = true;
        reuse->same_tables.assign(tables, 1);
        for (uint32_t k : s.settled->globbed) {
          if (k < tables) reuse->same_tables[k] = 0;
        }
      }
    }
    if (!s.graph) BERTH_CHECK(s.load_graph());
  }

  // 7. The ordinary run.
  RunOptions ro;
  ro.results_dir = s.results_dir;
  ro.staging_dir = s.cache + "/staging";
  ro.dry_run = s.o.dry_run;
  ro.fail_fast = s.o.fail_fast;
  ro.engine_version = s.o.engine_version;
  ro.clock = s.o.clock;
  ro.platform = platform();
  ro.host = s.place.host;
  ro.machine = s.place.machine;
  ro.launcher = s.place.launcher;
  ro.shared = s.shared;
  ro.worker = s.worker;
  ro.leases = s.leases.get();
  ro.index = s.index.get();
  ro.probe = s.place.probe;
  ro.cancel_fd = cancel_fd;
  if (s.sinks.progress) {
    // The progress line says when the store is being waited for.
    store::PatientStore* patient = s.patient;
    auto sink = s.sinks.progress;
    ro.progress = [patient, sink](const Progress& p) {
      std::string wait = patient != nullptr ? patient->waiting() : "";
      if (wait.empty()) return sink(p);
      Progress q = p;
      q.store_wait = std::move(wait);
      sink(q);
    };
  }
  ro.step_output = s.sinks.step_output;
  std::string report_path = s.report_path;
  ro.load_previous = [report_path] { return previous_bases(report_path); };
  auto previous_text = std::make_shared<std::optional<std::string>>();
  // A step the record holds finds its previous basis in its recorded entry, already
  // read, rather than in the report beside the pipeline, megabytes read again.
  std::shared_ptr<const RecordedEntries> recorded = reuse ? reuse->steps : nullptr;
  const Settled* record = reuse ? reuse->record : nullptr;
  // The record's entries by step name, made at the first question: a run that keys
  // every step again (a tool's version changed) asks once per step.
  auto by_name = std::make_shared<std::unordered_map<std::string_view, size_t>>();
  ro.find_previous = [report_path, previous_text, recorded, record,
                      by_name](const std::string& step) {
    if (recorded && record) {
      size_t n = std::min(record->entries.size(), recorded->text.size());
      if (by_name->empty() && n > 0) {
        by_name->reserve(n);
        for (size_t k = 0; k < n; ++k) by_name->emplace(record->entries[k].name, k);
      }
      if (auto k = by_name->find(step); k != by_name->end()) {
        if (auto basis = find_step_basis(recorded->text[k->second], step)) return basis;
      }
    }
    if (!*previous_text) {
      auto t = files::read_file(report_path);
      *previous_text = t.ok() ? std::move(*t) : std::string();
    }
    return find_step_basis(**previous_text, step);
  };
  ro.record_settled = s.may_settle && ro.index;
  ro.reuse = std::move(reuse);
  BERTH_TRY(RunReport rep, run_graph(*s.graph, *s.store, *s.pool, s.env, ro));
  if (s.patient != nullptr) {
    store::StoreWaits w = s.patient->stats();
    rep.store_waits = {w.outages, static_cast<double>(w.waited.count()) / 1000.0, w.gave_up};
    if (w.outages > 0) {
      rep.notices.push_back(fmt::format(
          "the store {} did not answer {} time{}, {:.1f} s in all; the run waited it out",
          s.patient->describe(), w.outages, w.outages == 1 ? "" : "s", rep.store_waits.waited_s));
    }
    if (w.gave_up > 0) {
      rep.notices.push_back(fmt::format(
          "the store {} did not answer within --store-patience {} ({} operation{} gave up): {}",
          s.patient->describe(), s.o.store_patience, w.gave_up, w.gave_up == 1 ? "" : "s",
          w.last_error));
    }
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
  // leaves its record for the next.
  RunOutcome out;
  out.worker = s.worker;
  out.tables_read_again = s.from_tables ? s.tables_again : 0;
  s.publish(rep, ro, out);
  out.exit_code = rep.exit_code();
  out.report = std::move(rep);
  return out;
}

}  // namespace berth::pipeline
