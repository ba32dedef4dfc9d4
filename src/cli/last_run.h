// The last run of a pipeline, read back by `berth report`, `berth methods` and
// `berth log`: its report (spec 04 §8) and the store it ran against.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

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

// The store a run's report names ("store": file:///x, s3://b/p (endpoint), or a worker's
// tiered(local=…, shared=URL)) as a URL to open: the shared store's, without the
// endpoint note. "" when it names none.
std::string store_url_of(const nlohmann::json& report);

// The store `url` names or, when it is empty, the one the report names, else the
// default beside the pipeline (file://<dir>/.berth/store).
Result<std::unique_ptr<store::ObjectStore>> open_run_store(const std::string& url,
                                                           const nlohmann::json& report,
                                                           const std::string& pipeline);

// The command that prints step `step`'s log: "berth log STEP", with the pipeline
// named (shell-quoted) unless it is the default pipeline.toml.
std::string log_command(const std::string& pipeline, const std::string& step);

}  // namespace berth::cli
