// Publishing a run (spec 04 §7.1, §8): its report written beside the pipeline and
// stored with the run as a runs row, and — for a run that may settle — its settled
// record kept for the next run, replacing the one it found.
//
// The bytes are the point. A report of 10^5 steps is megabytes, and a rerun after an
// edit differs from the last record in a few entries; so the report and the steps a
// rerun reports are kept as the last record's steps object with those entries in place
// (overrides), the runs row carries only the entries that differ, and the object is
// written once — its file in the cache is the store's copy where the store can adopt it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/index.h"
#include "pipeline/report.h"
#include "pipeline/report_text.h"
#include "pipeline/run_outcome.h"
#include "pipeline/settled.h"
#include "store/object_store.h"
#include "util/clock.h"

namespace berth::pipeline {

// The settled record a run found, which publishing builds on and replaces.
struct PreviousRecord {
  Settled* settled = nullptr;  // its head and, once decoded, entries (null: none found)
  files::SharedBytes object;   // its steps object's bytes, once mapped (recorded_entries())
  std::string steps;           // its steps object's file in the cache ("" none)
  std::string record;          // its own file ("" none)
  files::SharedBytes bytes;    // its own bytes, the step lines from `entries_at` on
  size_t entries_at = 0;
};

// Where a run publishes, and what its record states besides its steps.
struct PublishPlace {
  store::ObjectStore* store = nullptr;   // the run's store (its local tier, for a worker)
  store::ObjectStore* shared = nullptr;  // the store every worker sees
  Index* index = nullptr;                // names the record (needed to keep one)
  std::string cache;                     // the cache directory: settled/ lies in it
  std::string report_path;               // last-run.json
  std::string settled_name;              // the record's name: the pipeline's absolute path
  std::string host;                      // where berth runs
  std::vector<std::string> targets;      // a targeted run's targets (spec 04 §8.1)
  // settled_context() and settled_base() of this run, made only when a record is kept
  // (the context holds the pipeline file's bytes).
  std::function<std::string()> context;
  std::function<std::string()> base;
  size_t tables = 0;                     // how many [[step]] tables the file was read as
  std::vector<uint32_t> globbed;         // the tables that find foreach values among files
  const SettledCheck* check = nullptr;   // what of the previous record held
  int64_t check_ns = 0;                  // when that check began
  std::function<void(std::string_view)> say;
};

// The ordinary run `rep`: its report written to report_path and stored; with
// `record_settled`, its record kept when every step is in it (else the record forgotten),
// and the previous record's files removed unless they are the new one's. Nothing here
// fails the run: what could not be written or stored is said. Returns the report's text.
ReportText publish_run(RunReport& rep, bool record_settled, const PreviousRecord& previous,
                       const PublishPlace& place);

// The run answered from the previous record, every fact of which holds (`place.check`):
// its report is the record's steps file with its overrides, written and stored as the
// run's; racy inputs the check read again and found the same are recorded as settled.
// nullopt when the steps file is not whole (the run is then an ordinary one).
std::optional<RunOutcome> publish_settled(PreviousRecord& previous, const PublishPlace& place,
                                          const Clock& clock);

}  // namespace berth::pipeline
