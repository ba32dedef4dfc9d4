// The settled record (spec 04 §7.1): what a run in which every step was cached or
// executed saw, so that the next run of the same pipeline can tell by stat() alone
// that nothing changed — or, when something did, which steps it touched.
//
// A run whose every step came from the store or ran and published its own row, with no
// problem, no divergence and every fact it used verified at a stamp, leaves a record in
// the local index (index.h): a copy of what it was given (the engine, the working
// directory, the pipeline file's bytes, the store, the results directory), each
// distinct placement request its steps make, each tool's version command and answer,
// the stamp of every file input (as the index knew its hash) and of every result (as
// it was verified against its object), every object; per step, which of those facts
// it rests on, a fingerprint of its definition and where its entry lies in the steps
// file; and, in a file beside the index, the steps a rerun reports. The next run that
// finds the same context, every request still fitting the pool, every tool answering
// the same, every stamp unchanged and every object still present is that rerun: it
// reports those steps, all cached, without parsing the pipeline, keying a step or
// reading a row. When only some facts changed (an input edited, a result removed, the
// pipeline file edited), the run takes the ordinary path but reuses the entry of every
// step whose own facts, and whose upstream steps, still hold (executor.h): only what
// changed is keyed, looked up or run.
//
// The record is a cache, like the index it lives in: losing it costs one ordinary run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/index.h"
#include "place/launcher.h"
#include "place/pool.h"
#include "store/object_store.h"
#include "util/files.h"
#include "util/result.h"

namespace berth::pipeline {

// Bump when the encoding or what a record means changes: an older record then simply
// does not decode, and costs one ordinary run.
inline constexpr int kSettledFormat = 6;

struct SettledFile {
  std::string path;
  FileStamp stamp;
  // false: a result, stamped without its ctime (every link made to its object changes
  // the ctime, spec 04 §7); true: an input, stamped whole, as the index stamps it.
  bool with_ctime = true;
  // An input whose stamp is racy (index.h, stamp_is_racy()): its hash ("sha256:<hex>"),
  // and the stamp alone proves nothing — the check reads the file again. Empty: the
  // stamp is proof.
  std::string racy_hash;
  bool operator==(const SettledFile&) const = default;
};

struct SettledTool {
  std::vector<std::string> argv;  // its version command
  std::string output;             // what the command printed
  bool operator==(const SettledTool&) const = default;
};

// A placement request a step makes: tasks, cpus per task, gpus, nodes (-1: any).
struct SettledRequest {
  int tasks = 1, cpus_per_task = 1, gpus = 0, nodes = -1;
  bool operator==(const SettledRequest&) const = default;
};

// One step of the run, by name: what its entry rests on. Its entry may be reused by a
// later run when every fact it names still holds, every step it reads from was reused
// too, and (when the pipeline's bytes or a tool changed) its fingerprint is the same.
struct SettledStep {
  std::string name;
  std::string fingerprint;  // step_fingerprint() (key.h) of its definition
  size_t offset = 0;        // its entry ({...}) in the steps file
  size_t length = 0;
  uint32_t table = 0;       // the [[step]] table it was expanded from, from 0
  uint32_t combination = 0;  // which of its foreach combinations (Step::combination)
  std::vector<uint32_t> deps;     // the entries of the steps it reads from, before it
  std::vector<uint32_t> files;    // indices into Settled::files: its inputs and results
  std::vector<uint32_t> objects;  // indices into Settled::objects: its outputs'
  bool operator==(const SettledStep&) const = default;
};

// Where each entry ({...}) of a "steps" array lies in it: offset and length.
using EntrySpans = std::vector<std::pair<size_t, size_t>>;

// An entry a rerun reports in place of the steps object's: an edit-and-rerun changes a
// few entries of an array of megabytes, and the record carries those rather than a
// new object that differs from the last in a few entries.
struct SettledOverride {
  size_t offset = 0;  // the object's entry it replaces: where it lies in the object
  size_t length = 0;
  std::string entry;  // what a rerun reports instead
  bool operator==(const SettledOverride&) const = default;
};

struct Settled {
  std::string context;       // settled_context() of the run that left it
  // The same without the pipeline's bytes: a record whose base is this run's, but not
  // its context, was left by another version of the pipeline file, whose steps may
  // still be reused by fingerprint.
  std::string base;
  std::string pipeline;      // the pipeline's name, for the report
  // The object holding the report's steps (stored with the run), which is also the
  // name of the file in the cache directory that holds them (settled_steps_path()).
  std::string steps_object;
  // How many [[step]] tables the pipeline file was read as, one by one
  // (split_step_tables(), pipeline_file.h); 0 when it was read whole. A later version
  // of the file read the same way whose head and table k are these bytes gives table
  // k's steps the recorded fingerprints without computing them.
  size_t tables = 0;
  // The tables that find a foreach key's values among the files present: their bytes
  // unchanged, they may still expand to other steps. Ascending.
  std::vector<uint32_t> globbed;
  std::vector<SettledRequest> requests;
  std::vector<SettledTool> tools;
  std::vector<SettledFile> files;
  std::vector<std::string> objects;
  // In the steps' order; their offsets are in the steps a rerun reports: the object's
  // array with each override in place (settled_steps_text()).
  std::vector<SettledStep> entries;
  std::vector<SettledOverride> overrides;  // in the object's order, none overlapping
  size_t steps = 0;                        // how many steps the report's "steps" array holds
  size_t steps_bytes = 0;                  // how long that array is
  size_t object_bytes = 0;  // how long the steps object is (steps_bytes without overrides)
  bool operator==(const Settled&) const = default;
};

// The steps a rerun of `s` reports: `object` (the steps object's bytes) with each
// override in place. Fails when `object` is not the length the record says.
Result<std::string> settled_steps_text(const Settled& s, std::string_view object);
// `object` with each of `overrides` (in its order, none overlapping) in place. Fails for
// an override that lies outside the object or before the one it follows.
Result<std::string> splice_overrides(std::string_view object,
                                     const std::vector<SettledOverride>& overrides);

// Where each of the record's entries lies in its steps object rather than in the steps
// a rerun reports: an overridden entry, the bytes its override replaces. nullopt when the
// entries and overrides do not line up.
std::optional<EntrySpans> settled_object_spans(const Settled& s);

// The steps a rerun of a record reports, entry by entry, never made whole: each entry's
// text is in the steps object or is an override's entry (a 7 MB copy for 10^4 steps
// saved on every rerun that reuses them).
struct RecordedEntries {
  files::SharedBytes object;                  // the steps object's bytes
  std::vector<std::string> overridden;        // the overrides' entries
  std::vector<std::string_view> text;         // entry k's, in `object` or `overridden`
};
// `s`'s entries, `object` its steps object's bytes; null when the object is not the
// record's length or the entries and overrides do not line up.
std::shared_ptr<const RecordedEntries> recorded_entries(const Settled& s,
                                                        files::SharedBytes object);

// The overrides that make `object`, whose entries lie at `object_spans`, into `steps`,
// whose entries lie at `spans`: one per entry whose bytes differ. nullopt when they
// are not the same array but for those entries (another count of steps, other bytes
// between entries) or the overrides would hold more than `max_bytes`.
std::optional<std::vector<SettledOverride>> settled_overrides(std::string_view object,
                                                              const EntrySpans& object_spans,
                                                              std::string_view steps,
                                                              const EntrySpans& spans,
                                                              size_t max_bytes);

// Where the steps of a settled record's report are kept, beside the index, whole: a
// settled run copies them into its report with the kernel (copy_file_range, sendfile)
// rather than reading megabytes through SQLite and building the report in memory.
// "<cache>/settled/<hex of steps_object>.json"; "" for a name that is not an object's.
std::string settled_steps_path(std::string_view cache_dir, std::string_view steps_object);

// Where the record itself is kept: "<cache>/settled/<hex of steps_object>.record",
// beside its steps; the index's row for the pipeline names it (settled_pointer()). A
// 10,000-step record is megabytes: a file is written and read in one call each, where
// the index would page it through its B-tree and its log. "" for a name that is not an
// object's.
std::string settled_record_path(std::string_view cache_dir, std::string_view steps_object);

// The index's row for a record kept in the file `path`, `bytes` long, and back;
// nullopt for a row that is not one.
std::string settled_pointer(std::string_view path, size_t bytes);
std::optional<std::pair<std::string, size_t>> read_settled_pointer(std::string_view row);

// What a run was given, as one string to compare: every field length-prefixed, so no
// two different tuples share one. The pipeline's bytes are in it whole, not hashed: a
// settled run computes no hash at all.
// `cwd` is in it because relative paths (an input, --results, a file:// URL) are
// resolved against it.
std::string settled_context(std::string_view engine_version, std::string_view cwd,
                            std::string_view pipeline_path, std::string_view pipeline_bytes,
                            std::string_view store_url, std::string_view results_dir);

// The pipeline's bytes a settled_context() holds; nullopt for a context that is not one.
std::optional<std::string_view> settled_context_pipeline(std::string_view context);

// settled_context() without the pipeline's bytes (Settled::base).
std::string settled_base(std::string_view engine_version, std::string_view cwd,
                         std::string_view pipeline_path, std::string_view store_url,
                         std::string_view results_dir);

// The record as bytes, and back (the steps of the report are kept beside it, not in it).
// decode_settled() fails (kInvalidInput) on anything encode_settled() could not have written,
// naming the byte offset, what was expected there and the record's line it lies on
// ("settled record: at byte 40: expected a ctime (line 7)"); it never crashes, whatever
// the bytes. decode_settled_entries(), which starts in the middle, names the byte alone.
std::string encode_settled(const Settled& s);
Result<Settled> decode_settled(std::string_view bytes);
// The same, every line checked, but without keeping the step lines when
// `with_entries` is false (a settled run needs none of them): `entries_at` receives
// where they begin (0: there are none), for decode_settled_entries() to read them when
// they are needed, from the same bytes.
Result<Settled> decode_settled(std::string_view bytes, bool with_entries,
                               size_t* entries_at = nullptr);
Result<void> decode_settled_entries(std::string_view bytes, size_t entries_at, Settled& s);

// Which of a record's facts still hold: every file still has its stamp (a racy input:
// and its bytes still have the recorded hash), every object is still in the store,
// every request fits an empty pool of the nodes, every tool prints what it printed.
struct SettledCheck {
  std::vector<char> file_ok;    // per Settled::files
  std::vector<char> object_ok;  // per Settled::objects
  bool requests_fit = true;
  bool tools_same = true;
  // nullopt when everything holds; otherwise the first difference found ("in/3.txt
  // changed", "tool 'cc' answers differently").
  std::optional<std::string> difference;
  // Racy inputs whose bytes were read again and found unchanged.
  size_t racy_verified = 0;
  // Whether every file and object `e` rests on still holds.
  bool holds(const SettledStep& e) const;
};

// Checks every fact of `s`, on two threads (`store` must allow concurrent has_object()
// calls, as the executor's threads need anyway). With `stop_at_first`, stops at the
// first difference, and the bits past it mean nothing.
SettledCheck check_settled(const Settled& s, const std::vector<place::PoolNode>& nodes,
                           store::ObjectStore& store, place::VersionProbe& probe,
                           bool stop_at_first = false);

// `s` with every racy input that `now_ns` makes no longer racy turned into a plain one
// (its stamp is proof from now on); false when there was none to turn.
bool settle_racy_inputs(Settled& s, int64_t now_ns);

}  // namespace berth::pipeline
