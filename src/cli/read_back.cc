// A pipeline's last run read back as text (read_back.h).
#include "cli/read_back.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "cli/last_run.h"
#include "cli/store_url.h"
#include "pipeline/methods.h"
#include "pipeline/report_file.h"
#include "store/object_store.h"
#include "util/strings.h"

namespace berth::cli {

std::string pipeline_store_url(const std::string& pipeline) {
  return "file://" + pipeline::berth_dir_for(pipeline) + "/store";
}

Result<std::string> step_log(const std::string& pipeline, const std::string& name,
                             const std::string& store_url, const std::string& cache) {
  // 1. The step in the last run's report: its log is an object named there.
  std::string path = last_run_path(pipeline, cache);
  BERTH_TRY(nlohmann::json j, read_last_run(path, pipeline));
  const nlohmann::json* step = nullptr;
  if (j.contains("steps") && j["steps"].is_array()) {
    for (const auto& s : j["steps"]) {
      if (s.is_object() && pipeline::report_text(s, "name") == name) step = &s;
    }
  }
  // A step a targeted last run did not touch: as the earlier runs left it.
  std::vector<nlohmann::json> whole;
  if (step == nullptr && j.contains("targets")) {
    if (auto h = open_history(store_url, pipeline, cache); h.ok()) {
      whole = pipeline::whole_pipeline_steps(*h->store, j, h->runs);
      for (const auto& s : whole) {
        if (pipeline::report_text(s, "name") == name) step = &s;
      }
    }
  }
  if (step == nullptr) {
    return fail(Errc::kNotFound, fmt::format("the last run of {} ({}) has no step '{}'", pipeline,
                                             path, str::printable(name)));
  }
  std::string object = pipeline::report_text(*step, "log");
  if (object.empty()) {
    std::string state = pipeline::report_text(*step, "state");
    return fail(
        Errc::kNotFound,
        fmt::format(
            "step '{}' has no log: it {} in the last run of {}{}", str::printable(name),
            state == "skipped" || state == "refused" ? "was " + state + " and never ran"
                                                     : "was " + state,
            pipeline,
            state == "cached" ? " and its row, written before logs were kept, names none" : ""));
  }
  // 2. The object, verified, from the store the run used.
  BERTH_TRY(auto store, open_run_store(store_url, j, pipeline));
  BERTH_TRY(store::ObjectRead got, store->get_object(object));
  if (!got.present()) {
    if (!got.problem.empty()) return fail(Errc::kNotFound, got.problem);
    return fail(Errc::kNotFound, fmt::format("step '{}': its log {} is not in {}",
                                             str::printable(name), object, store->describe()));
  }
  return std::move(got.bytes);
}

Result<std::string> methods_text(const std::string& pipeline, const std::string& store_url,
                                 const std::string& run) {
  BERTH_TRY(History h, open_history(store_url, pipeline));
  BERTH_TRY(nlohmann::json j, chosen_report(h, run, pipeline));
  // The whole pipeline: after a targeted run, its steps and the earlier runs' others.
  std::vector<std::string> rows;
  for (const auto& s : pipeline::whole_pipeline_steps(*h.store, j, h.runs)) {
    std::string key = pipeline::report_text(s, "key");
    if (key.empty()) continue;
    auto row = h.store->get_row(store::row_address("steps", key));
    if (row.ok() && row->has_value()) rows.push_back(**row);
  }
  return pipeline::methods_paragraph(pipeline::report_text(j, "pipeline"), rows);
}

}  // namespace berth::cli
