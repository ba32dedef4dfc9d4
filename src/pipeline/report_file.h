// Where a run's report is kept — .berth/last-run.json beside the pipeline, or in a
// worker's cache — and reading it back (spec 04 §8): what `berth report`, `log` and
// `methods`, and Python's berth.report, start from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace berth::pipeline {

// Where a pipeline keeps its state: .berth/ beside the file.
std::string berth_dir_for(const std::string& pipeline_path);

// A run report read back from `path` (spec 04 §8). Fails naming the file when it cannot
// be read, nests deeper than any report does, or is not a JSON object; when there is
// none, kNotFound saying `pipeline` has not run there yet (not a file error: before the
// first run, that is all it means).
Result<nlohmann::json> read_run_report(const std::string& path, const std::string& pipeline);

// The last run's report of the pipeline at `pipeline_path` (.berth/last-run.json), as
// `berth report --format json` prints it. Fails (kNotFound) when it has not run,
// (kInvalidInput) when the file is not a report.
Result<nlohmann::json> last_run_report(const std::string& pipeline_path);

}  // namespace berth::pipeline
