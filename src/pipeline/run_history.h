// A pipeline's history (spec 04 §8.1): the runs rows a store keeps — one per run, a
// worker's included — listed for one pipeline, and read back whole, so that `berth
// runs`, `report --run`, `methods` and the page of an all-cached run answer from what
// the store holds rather than from one file beside the pipeline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/object_store.h"
#include "util/result.h"

namespace berth::pipeline {

// A field of a report (or of one of its steps), read as the type the report writes it
// — the default when it is absent or of another type: a row in a shared store may hold
// anything, and reading one never throws.
std::string report_text(const nlohmann::json& j, const char* key);
double report_number(const nlohmann::json& j, const char* key);
bool report_flag(const nlohmann::json& j, const char* key);

// One run, as its row says: the report without its steps.
struct RunEntry {
  std::string id;       // <started>-[<worker>-]<pid>: the row's key
  nlohmann::json head;  // the row: its counts, where it ran, its steps' object
};

// A run's id: what its runs row is keyed by. `process`: the pid, and for a process's
// second run on, ".<n>" after it.
std::string run_id(std::string_view started, std::string_view worker, std::string_view process);

// The store a run's report names ("store": file:///x, s3://b/p (endpoint), or a worker's
// tiered(local=…, shared=URL)) as a URL to open: the shared store's, without the
// endpoint note. "" when it names none.
std::string store_url_of(const nlohmann::json& report);

// The store a command about a run reads: `url` when given, else the one `report` names,
// else the default beside the pipeline (file://<dir>/.berth/store).
std::string run_store_url(const std::string& url, const nlohmann::json& report,
                          const std::string& pipeline_path);

// Whether a run's report (or row) is of the pipeline at `pipeline_path`: its
// `pipeline_path` names the same file; a report written without one, by the file's
// name.
bool same_pipeline(const nlohmann::json& head, const std::string& pipeline_path);

// Every run of the pipeline at `pipeline_path` the store keeps, newest first. A row that
// is not a report is left out; a store that cannot be listed or read fails.
Result<std::vector<RunEntry>> list_runs(store::ObjectStore& store,
                                        const std::string& pipeline_path);

// The run `which` names among `runs`: its whole id, or a prefix only one id has.
// Fails (kNotFound) naming what there is.
Result<const RunEntry*> find_run(const std::vector<RunEntry>& runs, const std::string& which);

// A run's report read back whole, as last-run.json holds it: the row with its steps
// object's array in place of `steps_object`, and each of `steps_changed` in place of
// the entry of the same name.
Result<nlohmann::json> read_run(store::ObjectStore& store, const RunEntry& run);

// The steps a pipeline last had, for `methods` and `log`: the report's, and when it was
// a targeted run, each step of the earlier runs (newest first) up to and including
// the last whole one that the report lacks — a targeted run never narrows what the
// pipeline's methods describe. `report` is the last run's; `earlier` newest first.
// Entries keep their report's order, the earlier runs' after.
std::vector<nlohmann::json> whole_pipeline_steps(store::ObjectStore& store,
                                                 const nlohmann::json& report,
                                                 const std::vector<RunEntry>& earlier);

// Where the cached steps of `report` were computed: for each step key that `report`
// has as cached, the earlier run (of `earlier`, newest first) in which that key
// executed, with that run's entry for it. Runs are read until every key is found.
struct Computed {
  const RunEntry* run = nullptr;
  nlohmann::json entry;  // the step's entry in that run: its node, cores and times
};
std::map<std::string, Computed> computing_runs(store::ObjectStore& store,
                                               const nlohmann::json& report,
                                               const std::vector<RunEntry>& earlier);

}  // namespace berth::pipeline
