// The last run of a pipeline, read back by `berth report`, `berth methods` and
// `berth log`: its report (spec 04 §8) and the store it ran against.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/run_history.h"
#include "store/object_store.h"
#include "util/result.h"

namespace berth::cli {

// The pipeline's own last-run.json (pipeline::pipeline_dir_for), in `cache` when given
// (a worker's, or a run with --cache).
std::string last_run_path(const std::string& pipeline, const std::string& cache = "");

// The report at `path`, parsed. Fails naming the file when it cannot be read, nests
// deeper than any report does, or is not JSON; when there is none, says `pipeline`
// has not run there yet (kNotFound).
Result<nlohmann::json> read_last_run(const std::string& path, const std::string& pipeline);

// The store `url` names or, when it is empty, the one the report names, else the
// default beside the pipeline (file://<dir>/.berth/store).
Result<std::unique_ptr<store::ObjectStore>> open_run_store(const std::string& url,
                                                           const nlohmann::json& report,
                                                           const std::string& pipeline);

// A pipeline's history (pipeline/run_history.h): the store it ran against and the runs
// of it that store keeps, newest first.
struct History {
  std::unique_ptr<store::ObjectStore> store;
  std::vector<pipeline::RunEntry> runs;
  nlohmann::json last;  // the last run's report beside the pipeline; null when none
};

// The history of `pipeline` in the store `url` names or, when it is empty, the one its
// last run used, else the default beside it. A pipeline that has not run is not an
// error here: `last` is then null.
Result<History> open_history(const std::string& url, const std::string& pipeline,
                             const std::string& cache = "");

// The report a command answers for: run `which` of the history (read back from the
// store), or with `which` empty the last run's report beside the pipeline.
Result<nlohmann::json> chosen_report(History& h, const std::string& which,
                                     const std::string& pipeline, const std::string& cache = "");

// The command that prints step `step`'s log: "berth log STEP", with the pipeline
// named (shell-quoted) unless it is the default pipeline.toml.
std::string log_command(const std::string& pipeline, const std::string& step);

}  // namespace berth::cli
