// The last run, read back (last_run.h).
#include "cli/last_run.h"

#include <fmt/format.h>

#include "cli/store_url.h"
#include "pipeline/command.h"
#include "pipeline/report.h"
#include "pipeline/session.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::cli {

std::string last_run_path(const std::string& pipeline, const std::string& cache) {
  return pipeline::pipeline_dir_for(pipeline, cache) + "/last-run.json";
}

Result<nlohmann::json> read_last_run(const std::string& path, const std::string& pipeline) {
  return pipeline::read_run_report(path, pipeline);
}

Result<std::unique_ptr<store::ObjectStore>> open_run_store(const std::string& url,
                                                           const nlohmann::json& report,
                                                           const std::string& pipeline) {
  std::string u = pipeline::run_store_url(url, report, pipeline);
  auto s = open_store_url(u);
  if (!s.ok()) return s.error().with_context(url.empty() ? "the run's store " + u : "--store");
  return s;
}

Result<History> open_history(const std::string& url, const std::string& pipeline,
                             const std::string& cache) {
  History h;
  auto last = read_last_run(last_run_path(pipeline, cache), pipeline);
  if (last.ok()) {
    h.last = std::move(*last);
  } else if (last.error().code() != Errc::kNotFound) {
    return last.error();
  }
  auto store = open_run_store(url, h.last.is_null() ? nlohmann::json::object() : h.last, pipeline);
  // No store beside a pipeline that never ran: that it never ran is the answer.
  if (!store.ok() && url.empty() && h.last.is_null()) return last.error();
  if (!store.ok()) return store.error();
  h.store = std::move(*store);
  auto runs = pipeline::list_runs(*h.store, pipeline);
  if (!runs.ok()) return runs.error().with_context(h.store->describe());
  h.runs = std::move(*runs);
  return h;
}

Result<nlohmann::json> chosen_report(History& h, const std::string& which,
                                     const std::string& pipeline, const std::string& cache) {
  if (which.empty()) {
    if (!h.last.is_null()) return h.last;
    return read_last_run(last_run_path(pipeline, cache), pipeline);  // says it has not run
  }
  BERTH_TRY(const pipeline::RunEntry* run, pipeline::find_run(h.runs, which));
  return pipeline::read_run(*h.store, *run);
}

std::string log_command(const std::string& pipeline, const std::string& step) {
  if (pipeline == "pipeline.toml") return "berth log " + pipeline::shell_quote(step);
  return fmt::format("berth log {} {}", pipeline::shell_quote(pipeline), pipeline::shell_quote(step));
}

}  // namespace berth::cli
