// berth report and berth methods: the last run of a pipeline, read back (spec 04 §8,
// §9).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/store_url.h"
#include "pipeline/methods.h"
#include "pipeline/report.h"
#include "pipeline/session.h"
#include "store/object_store.h"
#include "util/files.h"

namespace berth::cli {
namespace {

using pipeline::berth_dir_for;

struct ReportFlags {
  std::string pipeline = "pipeline.toml";
  std::string html;
  std::string format = "text";
};

int run_report(const ReportFlags& f) {
  auto j = pipeline::last_run_report(f.pipeline);
  if (!j.ok()) return report(j.error().with_context("berth report"));
  if (!f.html.empty()) {
    pipeline::RunReport r;
    r.pipeline = j->value("pipeline", "");
    r.elapsed_s = j->value("elapsed_s", 0.0);
    for (const auto& s : (*j)["steps"]) {
      pipeline::StepRecord rec;
      rec.name = s.value("name", "");
      std::string st = s.value("state", "");
      for (auto k : {pipeline::StepState::kCached, pipeline::StepState::kExecuted,
                     pipeline::StepState::kFailed, pipeline::StepState::kSkipped,
                     pipeline::StepState::kRefused, pipeline::StepState::kCancelled}) {
        if (st == pipeline::step_state_name(k)) rec.state = k;
      }
      rec.node = s.value("node", "");
      rec.cores = s.value("cores", "");
      rec.start_s = s.value("start_s", 0.0);
      rec.end_s = s.value("end_s", 0.0);
      rec.reason = s.value("reason", "");
      rec.computed_by = s.value("computed_by", "");
      r.steps.push_back(rec);
    }
    auto w = files::write_file_atomic(f.html, pipeline::report_html(r));
    if (!w.ok()) return report(w.error());
  }
  std::string out = f.format == "json"
                        ? j->dump(2) + "\n"
                        : fmt::format(
                              "{}: {} executed, {} cached, {} failed, {} "
                              "skipped, {} refused, {:.2f} s\n",
                              j->value("pipeline", ""), j->value("executed", 0),
                              j->value("cached", 0), j->value("failed", 0), j->value("skipped", 0),
                              j->value("refused", 0), j->value("elapsed_s", 0.0));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

struct MethodsFlags {
  std::string pipeline = "pipeline.toml";
  std::string store;
};

int run_methods(const MethodsFlags& f) {
  auto j = pipeline::last_run_report(f.pipeline);
  if (!j.ok()) return report(j.error().with_context("berth methods"));
  std::string url = f.store.empty() ? "file://" + berth_dir_for(f.pipeline) + "/store" : f.store;
  auto store = open_store_url(url);
  if (!store.ok()) return report(store.error());
  std::vector<std::string> rows;
  for (const auto& s : (*j)["steps"]) {
    std::string key = s.value("key", "");
    if (key.empty()) continue;
    auto row = (*store)->get_row(store::row_address("steps", key));
    if (row.ok() && row->has_value()) rows.push_back(**row);
  }
  std::string text = pipeline::methods_paragraph(j->value("pipeline", ""), rows);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

// --- berth store: inspect the store by hand.

}  // namespace

std::function<int()> setup_report(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->capture_default_str();
  app.add_option("--html", f->html, "Write an HTML report with a timeline to FILE");
  app.add_option("--format", f->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [f] { return run_report(*f); };
}

std::function<int()> setup_methods(CLI::App& app) {
  auto f = std::make_shared<MethodsFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->capture_default_str();
  app.add_option("--store", f->store, "Store URL");
  return [f] { return run_methods(*f); };
}

}  // namespace berth::cli
