// Where a pipeline keeps what is its own — its last run's report, beside the pipeline
// or in a worker's cache — and reading it back (spec 04 §8): what `berth report`, `log`
// and `methods`, and Python's berth.report, start from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace berth::pipeline {

// Where a pipeline keeps its state: .berth/ beside the file. Pipelines in one folder
// share its store and cache (content-addressed: nothing there is one pipeline's).
std::string berth_dir_for(const std::string& pipeline_path);

// Where one pipeline keeps what is its own and no other pipeline's (spec 04 §8): its
// last report, the steps it last had, what runs now, kept failures.
// <dir>/.berth/pipelines/<file name>, or <cache>/pipelines/<file name> when `cache`
// is given (a worker's, or a run with --cache).
std::string pipeline_dir_for(const std::string& pipeline_path, const std::string& cache = "");

// Where a pipeline's results are materialised unless --results says: <dir>/results for
// the folder's pipeline.toml, <dir>/results-<stem> for any other pipeline file, so that
// two pipelines in one folder never write into each other's results.
std::string default_results_dir(const std::string& pipeline_path);

// A run report read back from `path` (spec 04 §8). Fails naming the file when it cannot
// be read, nests deeper than any report does, or is not a JSON object; when there is
// none, kNotFound saying `pipeline` has not run there yet (not a file error: before the
// first run, that is all it means).
Result<nlohmann::json> read_run_report(const std::string& path, const std::string& pipeline);

// The last run's report of the pipeline at `pipeline_path` (its last-run.json), as
// `berth report --format json` prints it. Fails (kNotFound) when it has not run,
// (kInvalidInput) when the file is not a report.
Result<nlohmann::json> last_run_report(const std::string& pipeline_path);

}  // namespace berth::pipeline
