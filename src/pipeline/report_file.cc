// A run's report read back (report_file.h).
#include "pipeline/report_file.h"

#include <fmt/format.h>

#include <filesystem>

#include "pipeline/command.h"
#include "pipeline/report.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {

std::string berth_dir_for(const std::string& pipeline_path) {
  std::filesystem::path p = std::filesystem::absolute(pipeline_path).parent_path();
  return (p / ".berth").string();
}

std::string pipeline_dir_for(const std::string& pipeline_path, const std::string& cache) {
  std::string name = std::filesystem::path(pipeline_path).filename().string();
  std::string base = cache.empty() ? berth_dir_for(pipeline_path)
                                   : std::filesystem::absolute(cache).string();
  return base + "/pipelines/" + name;
}

std::string default_results_dir(const std::string& pipeline_path) {
  std::filesystem::path p = std::filesystem::absolute(pipeline_path);
  if (p.filename() == "pipeline.toml") return (p.parent_path() / "results").string();
  return (p.parent_path() / ("results-" + p.stem().string())).string();
}

Result<nlohmann::json> read_run_report(const std::string& path, const std::string& pipeline) {
  auto text = files::read_file(path);
  if (!text.ok() && text.error().code() == Errc::kNotFound) {
    return fail(Errc::kNotFound,
                fmt::format("{} has not run here yet: there is no report at {} (`berth run "
                            "{}` leaves one)",
                            pipeline, path, shell_quote(pipeline)));
  }
  if (!text.ok()) return text.error();
  if (str::json_deeper_than(*text, kMaxReportDepth)) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: not a run report (nested more than {} levels deep)", path,
                            kMaxReportDepth));
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return fail(Errc::kInvalidInput, path + ": not a run report");
  }
  return j;
}

Result<nlohmann::json> last_run_report(const std::string& pipeline_path) {
  return read_run_report(pipeline_dir_for(pipeline_path) + "/last-run.json", pipeline_path);
}

}  // namespace berth::pipeline
