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

std::string store_url_of(const nlohmann::json& report) {
  if (!report.contains("store") || !report["store"].is_string()) return "";
  std::string s = report["store"].get<std::string>();
  // A worker's store is its local tier in front of the shared one: the shared one
  // holds everything the run stored.
  if (size_t at = s.find("shared="); s.rfind("tiered(", 0) == 0 && at != std::string::npos) {
    s = s.substr(at + 7);
    if (!s.empty() && s.back() == ')') s.pop_back();
  }
  if (size_t sp = s.find(' '); sp != std::string::npos) s.resize(sp);  // " (endpoint)"
  return s;
}

Result<std::unique_ptr<store::ObjectStore>> open_run_store(const std::string& url,
                                                           const nlohmann::json& report,
                                                           const std::string& pipeline) {
  std::string u = url;
  if (u.empty()) u = store_url_of(report);
  if (u.empty()) u = "file://" + pipeline::berth_dir_for(pipeline) + "/store";
  auto s = open_store_url(u);
  if (!s.ok()) return s.error().with_context(url.empty() ? "the run's store " + u : "--store");
  return s;
}

std::string log_command(const std::string& pipeline, const std::string& step) {
  if (pipeline == "pipeline.toml") return "berth log " + pipeline::shell_quote(step);
  return fmt::format("berth log {} {}", pipeline::shell_quote(pipeline), pipeline::shell_quote(step));
}

}  // namespace berth::cli
