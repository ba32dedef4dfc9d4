// The run report (spec 04 §8): what happened to every step of a run, and its JSON and
// HTML forms. The executor fills a RunReport; the session stores, writes and prints it;
// `berth report` and `berth methods` read it back.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/settled.h"

namespace berth::pipeline {

// kWouldRun is a dry run's alone: a step it would run (spec 04 §7, --dry-run).
enum class StepState {
  kPending,
  kCached,
  kExecuted,
  kFailed,
  kSkipped,
  kRefused,
  kCancelled,
  kWouldRun
};
inline constexpr size_t kStepStates = 8;
const char* step_state_name(StepState s);  // "cached", "executed", "would-run", ...

struct StepRecord {
  std::string name;
  StepState state = StepState::kPending;
  std::string key;
  std::string reason;  // dry run / failure / refusal: why (never repeating its state)
  std::string node;    // where it ran
  std::string cores;   // "0-1"
  double start_s = 0;  // seconds since the run began
  double end_s = 0;
  int exit_code = 0;
  // output -> {object, canonical form, canonical hash}
  struct Output {
    std::string object, form, canonical;
  };
  std::map<std::string, Output> outputs;
  // What the key was computed from: the text of a JSON object (command, recipe hash,
  // each input's tagged hashes, tool version hashes), compact, as nlohmann dumps it;
  // empty until keyed. A later --dry-run compares it with this run's to say what
  // changed. Text rather than a tree: a run of 10^6 steps keeps 10^6 of them.
  std::string basis;
  // Who computed the outputs (from the provenance record of the run that did: ours, or
  // adopted from the row on a cache hit or a lost race): the worker's name, or the
  // host for an ordinary run.
  std::string computed_by;
  // What its launcher did not do that the step asked for (a memory cap not enforced,
  // a wire-up not given), one line each; reported with the step (spec 04 §8).
  std::vector<std::string> notices;
  // Its output, stdout and stderr together, kept as an object (spec 04 §7.3) and named
  // in its row, so that a cached step has the log of the run that computed it; empty
  // when there is none (skipped, or never started).
  std::string log;
  // A step that ran and did not succeed: its last lines of output (log_tail()).
  std::string log_tail;
  // How many times it was started: more than 1 after retries (spec 04 §2.3).
  int attempts = 0;
  // Ended at its `timeout`, its whole process tree with it.
  bool timed_out = false;
  // A dry run's, with --commands, for a would-run step: its command as it would be
  // run (dry_run.h); empty otherwise.
  std::string command;
  // A step whose entry was reused from the settled record (executor.h): that entry, as
  // the report writes it, verbatim (in RunReport::recorded). Its name, state and key
  // are set; its outputs once a step that reads them needs them; nothing else.
  std::string_view recorded;
};

// The last lines of a step's output, for a report and a page: at most kLogTailLines
// lines and about kLogTailBytes bytes (a longer last line keeps its end), without the
// final newline.
inline constexpr size_t kLogTailLines = 10;
inline constexpr size_t kLogTailBytes = 2048;
std::string log_tail(std::string_view log);

struct Divergence {
  std::string step, key, output, ours, theirs;
};

// What the leases did in a worker run (spec 06).
struct LeaseStats {
  int acquired = 0;   // claims this worker won
  int held = 0;       // times a step was found claimed elsewhere and deferred
  int lock_free = 0;  // keys whose generations were exhausted: run without a lease
  int released = 0;   // keys handed back after a failure
  int rearms = 0;     // waits between scopes for work claimed elsewhere
  int extended = 0;   // claims extended while their step still ran
  int lost = 0;       // claims found taken by another worker when extended
};

struct RunReport {
  std::string pipeline;
  std::string store;
  std::string worker;   // worker mode: this worker's name
  std::string started;  // ISO-8601 UTC
  double elapsed_s = 0;
  // Set when the run is published (publish.h): its id (run_history.h), the pipeline
  // file's absolute path, the host berth ran on, and the targets a targeted run named.
  std::string run;
  std::string pipeline_path;
  std::string host;
  std::vector<std::string> targets;
  std::vector<StepRecord> steps;  // graph order
  std::vector<Divergence> divergences;
  std::vector<std::string> problems;  // corrupt objects found, and the like
  std::vector<std::string> notices;   // what the store said when opened (store notices())
  // One line per kind of request a launcher did not honour in this run (a memory cap
  // not enforced, …), naming the steps; each step's own lines are its notices. In the
  // report these follow `notices`.
  std::vector<std::string> launch_notices;
  LeaseStats leases;
  bool dry_run = false;  // its steps were looked at, none run (kWouldRun)
  // The store's outages this run waited out (spec 05 §9): how many ended, their
  // summed length, and the operations that gave up past --store-patience.
  struct StoreWaits {
    size_t outages = 0;
    double waited_s = 0;
    size_t gave_up = 0;
  } store_waits;
  // With RunOptions::record_settled, a run in which every step was cached or executed,
  // with no problem and no divergence, leaves what it saw here (settled.h), with
  // everything but its context and steps filled in; settled_steps_json() is what a
  // rerun reports.
  std::optional<Settled> settled;
  // A dry run's (dry_run.h): the step templates its steps were expanded from, and
  // each step's, by index into them. Empty for any other run.
  std::vector<std::string> templates;
  std::vector<uint32_t> template_of;
  // The settled record's entries, which reused steps' entries (StepRecord::recorded) lie in.
  std::shared_ptr<const RecordedEntries> recorded;
  int count(StepState s) const;
  // How many steps are in each state (indexed by StepState), in one pass over them.
  std::array<int, kStepStates> counts() const;
  int exit_code() const;  // 0, or 1 when any step failed / was refused, 130 if cancelled
};

struct Progress {
  size_t total = 0;
  size_t done = 0;  // executed + cached + failed + skipped + refused + cancelled
  size_t running = 0;
  size_t deferred = 0;  // claimed by another worker
  int executed = 0, cached = 0, failed = 0, skipped = 0;
  double elapsed_s = 0;
  // Seconds left, estimated from the executed steps' mean duration and the
  // concurrency seen so far; negative while nothing has executed.
  double eta_s = -1;
  // "" while the store answers; else what is being waited for ("waiting 12 s for
  // s3://…"): the store's outage, told on the progress line (spec 05 §9).
  std::string store_wait;
};

// One output's record as a row and the report write it: {object, form, canonical}.
nlohmann::ordered_json output_json(const StepRecord::Output& o);

// The report as JSON (spec 04 §8) and the HTML timeline. report_steps_json() is its
// "steps" array alone. report_json(r, steps, ...) is the report around `steps` already
// written: inline as "steps", or with `as_object` named by "steps_object" (the row a
// run stores, its steps an object in the store). `settled_steps`: a run answered from
// a settled record (settled.h), that many steps, all cached ("settled": true).
// `steps_changed` (with `as_object`): this run's entries, as written, that differ from
// the object's entry of the same name (the row's "steps_changed", spec 04 §8).
std::string report_json(const RunReport& r);
// With `spans`: where each step's entry ({...}) lies in what is returned, as (offset,
// length), in step order.
std::string report_steps_json(const RunReport& r, EntrySpans* spans = nullptr);
// One step's entry of that array; with `as_rerun`, as settled_steps_json() writes it.
std::string step_entry_json(const StepRecord& s, bool as_rerun);
std::string report_json(const RunReport& r, std::string_view steps, bool as_object = false,
                        std::optional<size_t> settled_steps = std::nullopt,
                        const std::vector<std::string_view>& steps_changed = {});
// A cached step's reason.
//
// Where a step becomes `cached` — the one state a report shows for "not run here, its
// result taken from elsewhere" — there are five producers, each named here:
//   - a store hit: its key's row is in the store and its objects are (StepCache::lookup,
//     step_cache.cc), the reason below;
//   - a record reuse: its entry in the last settled record still holds, so it is not
//     even keyed (RecordReuse::entry_for, record_reuse.h), the reason below;
//   - a twin: another step of the same run had the same key and computed it once
//     (Executor::finish_twins, executor.cc), "cached: the same key as '<step>', computed once …";
//   - the record's rewrite: a settled record's steps are written as the cache hits a
//     rerun would find, each executed step as cached (step_entry_json with as_rerun,
//     report.cc), the reason below;
//   - the whole-run answer: a run answered from a settled record reports every step
//     cached, by count (report_json with settled_steps), without a step being looked at.
inline constexpr std::string_view kCachedReason = "cached: the store has a result for this key";

// The "steps" array a rerun of `r` would report, every step cached: each executed step
// as a cache hit on the row it wrote reads (no times, the reason above), the others as
// they are. report_steps_json(r) when nothing executed.
std::string settled_steps_json(const RunReport& r);
// The same from `steps`, report_steps_json(r, &spans) already written: every entry but
// an executed step's copied from it. `out` receives the entries' spans in what is
// returned.
std::string settled_steps_json(const RunReport& r, std::string_view steps,
                               const EntrySpans& spans, EntrySpans* out);

// How deep a report's JSON nests, and more: a file deeper than this is not a report,
// and is refused before a parser recurses into it.
inline constexpr int kMaxReportDepth = 64;

// Step `name`'s basis in the text of a report as report_json() writes it, dumped as
// nlohmann::json (keys sorted), found without parsing the rest of the report: nullopt
// when the step is not there, has no basis, or the text is not laid out so.
std::optional<std::string> find_step_basis(std::string_view report, std::string_view name);

// The report up to its steps: report_json(r, steps, false, s) is report_json_head(r, s),
// then the steps, then kReportTail.
std::string report_json_head(const RunReport& r,
                             std::optional<size_t> settled_steps = std::nullopt);
inline constexpr std::string_view kReportTail = "}\n";
// The page (spec 04 §8): a summary, the timeline, a table of every step with a link to
// its log, a failed step's last lines under its row, and the logs `logs` holds (by step
// name: the end of each, and how long it is whole). A step with a log not embedded
// names the `berth log` command instead.
struct EmbeddedLog {
  std::string text;  // the log's last bytes
  size_t size = 0;   // the whole log's
};
inline constexpr size_t kHtmlLogBytes = 64 * 1024;  // embedded per step, at most
inline constexpr size_t kHtmlLogsBytes = 8 << 20;   // embedded per page, at most
// An earlier run that computed some of the steps a run found cached (run_history.h):
// the page draws its timeline too, so that an all-cached run still shows its steps.
struct EarlierRun {
  std::string id, started, host;
  double elapsed_s = 0;
  std::vector<StepRecord> steps;  // the steps it computed, as its report has them
};
std::string report_html(const RunReport& r, const std::map<std::string, EmbeddedLog>& logs = {},
                        const std::vector<EarlierRun>& earlier = {});

}  // namespace berth::pipeline
