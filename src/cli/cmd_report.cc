// berth report and berth methods: the last run of a pipeline, read back (spec 04 §8,
// §9).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/last_run.h"
#include "cli/read_back.h"
#include "cli/store_url.h"
#include "pipeline/methods.h"
#include "pipeline/report.h"
#include "pipeline/session.h"
#include "store/object_store.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

struct ReportFlags {
  std::string pipeline = "pipeline.toml";
  std::string html;
  std::string format = "text";
  std::string store;
  std::string run;  // an earlier run's id (berth runs); "" the last
};

// One step of a report, as the page draws it.
pipeline::StepRecord step_of(const nlohmann::json& s) {
  using pipeline::report_number, pipeline::report_text;
  pipeline::StepRecord rec;
  rec.name = report_text(s, "name");
  std::string st = report_text(s, "state");
  for (auto k : {pipeline::StepState::kCached, pipeline::StepState::kExecuted,
                 pipeline::StepState::kFailed, pipeline::StepState::kSkipped,
                 pipeline::StepState::kRefused, pipeline::StepState::kCancelled}) {
    if (st == pipeline::step_state_name(k)) rec.state = k;
  }
  rec.node = report_text(s, "node");
  rec.cores = report_text(s, "cores");
  rec.start_s = report_number(s, "start_s");
  rec.end_s = report_number(s, "end_s");
  rec.reason = report_text(s, "reason");
  rec.computed_by = report_text(s, "computed_by");
  rec.log = report_text(s, "log");
  rec.log_tail = report_text(s, "log_tail");
  rec.attempts = static_cast<int>(report_number(s, "attempts"));
  rec.timed_out = pipeline::report_flag(s, "timed_out");
  return rec;
}

// The steps of a report, as the page draws them.
pipeline::RunReport report_of(const nlohmann::json& j) {
  pipeline::RunReport r;
  r.pipeline = pipeline::report_text(j, "pipeline");
  r.started = pipeline::report_text(j, "started");
  r.elapsed_s = pipeline::report_number(j, "elapsed_s");
  if (!j.contains("steps") || !j["steps"].is_array()) return r;
  for (const auto& s : j["steps"]) {
    if (s.is_object()) r.steps.push_back(step_of(s));
  }
  return r;
}

// Where the cached steps of report `j` were computed (run_history.h), each earlier run
// with its steps, for the page's timelines: an all-cached run still shows its steps.
std::vector<pipeline::EarlierRun> earlier_runs(History& h, const nlohmann::json& j) {
  // By run, newest first (§8.1): each run's place in the history.
  std::map<const pipeline::RunEntry*, pipeline::EarlierRun> by_run;
  for (auto& [key, c] : pipeline::computing_runs(*h.store, j, h.runs)) {
    pipeline::EarlierRun& e = by_run[c.run];
    if (e.id.empty()) {
      e = {c.run->id, pipeline::report_text(c.run->head, "started"),
           pipeline::report_text(c.run->head, "host"),
           pipeline::report_number(c.run->head, "elapsed_s"), {}};
    }
    e.steps.push_back(step_of(c.entry));
  }
  std::vector<pipeline::EarlierRun> out;
  for (const auto& run : h.runs) {
    if (auto it = by_run.find(&run); it != by_run.end()) out.push_back(std::move(it->second));
  }
  return out;
}

// The end of every step's log that the page can hold, read from the run's store: each
// at most kHtmlLogBytes, all together at most kHtmlLogsBytes; a log that cannot be read
// is left out (the page then names `berth log` for it).
std::map<std::string, pipeline::EmbeddedLog> logs_of(const pipeline::RunReport& r,
                                                     store::ObjectStore* store) {
  std::map<std::string, pipeline::EmbeddedLog> out;
  if (store == nullptr) return out;
  size_t budget = pipeline::kHtmlLogsBytes;
  for (const auto& s : r.steps) {
    if (s.log.empty() || budget == 0) continue;
    auto got = store->get_object(s.log);
    if (!got.ok() || !got->present()) continue;
    pipeline::EmbeddedLog log;
    log.size = got->bytes.size();
    size_t keep = std::min({got->bytes.size(), pipeline::kHtmlLogBytes, budget});
    log.text = got->bytes.substr(got->bytes.size() - keep);
    budget -= keep;
    out.emplace(s.name, std::move(log));
  }
  return out;
}

int run_report(const ReportFlags& f) {
  // The last run's report is beside the pipeline; an earlier one, and the runs that
  // computed what a run found cached, are read from the store's history.
  Result<History> h = !f.run.empty() || !f.html.empty()
                          ? open_history(f.store, f.pipeline)
                          : Result<History>(Error(Errc::kNotFound, "not opened"));
  if (!f.run.empty() && !h.ok()) return report(h.error().with_context("berth report"));
  auto j = h.ok() ? chosen_report(*h, f.run, f.pipeline)
                  : read_last_run(last_run_path(f.pipeline), f.pipeline);
  if (!j.ok()) return report(j.error().with_context("berth report"));
  pipeline::RunReport r = report_of(*j);
  if (!f.html.empty()) {
    // The page links every step to its log, embedding what it can: a history that
    // cannot be read costs the earlier runs' timelines, a store that cannot be opened
    // the embedded logs too, never the page.
    std::unique_ptr<store::ObjectStore> own;
    store::ObjectStore* logs_store = h.ok() ? h->store.get() : nullptr;
    if (!h.ok()) {
      std::fprintf(stderr, "berth: the page draws no earlier run: %s\n",
                   h.error().message().c_str());
      if (auto s = open_run_store(f.store, *j, f.pipeline); s.ok()) {
        own = std::move(*s);
        logs_store = own.get();
      } else {
        std::fprintf(stderr, "berth: the page embeds no log: %s\n", s.error().message().c_str());
      }
    }
    auto logs = logs_of(r, logs_store);
    auto earlier = h.ok() ? earlier_runs(*h, *j) : std::vector<pipeline::EarlierRun>{};
    auto w = files::write_file_atomic(f.html, pipeline::report_html(r, logs, earlier));
    if (!w.ok()) return report(w.error());
  }
  if (f.format == "json") {
    std::string out = j->dump(2) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return kExitOk;
  }
  std::string out =
      fmt::format("{}: {} executed, {} cached, {} failed, {} skipped, {} refused, {:.2f} s\n",
                  j->value("pipeline", ""), j->value("executed", 0), j->value("cached", 0),
                  j->value("failed", 0), j->value("skipped", 0), j->value("refused", 0),
                  j->value("elapsed_s", 0.0));
  // Each step that ran and did not succeed: why, its last lines, where the rest is.
  for (const auto& s : r.steps) {
    if (s.state != pipeline::StepState::kFailed && s.state != pipeline::StepState::kCancelled) {
      continue;
    }
    out += fmt::format("{:<9} {}: {}\n", pipeline::step_state_name(s.state), s.name, s.reason);
    for (auto line : str::split(s.log_tail, '\n')) out += fmt::format("  | {}\n", line);
    if (!s.log.empty()) out += fmt::format("  (its whole output: {})\n", log_command(f.pipeline, s.name));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

struct MethodsFlags {
  std::string pipeline = "pipeline.toml";
  std::string store;
  std::string run;  // an earlier run's id; "" the last
};

int run_methods(const MethodsFlags& f) {
  auto text = methods_text(f.pipeline, f.store, f.run);
  if (!text.ok()) return report(text.error().with_context("berth methods"));
  std::fwrite(text->data(), 1, text->size(), stdout);
  return kExitOk;
}

}  // namespace

std::function<int()> setup_report(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->capture_default_str();
  app.add_option("--html", f->html,
                 "Write an HTML report with a timeline, and each step's log, to FILE");
  app.add_option("--store", f->store,
                 "Store URL the logs are read from (default: the one the run used)");
  app.add_option("--format", f->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--run", f->run, "An earlier run (its id, or the start of it: berth runs)");
  return [f] { return run_report(*f); };
}

std::function<int()> setup_methods(CLI::App& app) {
  auto f = std::make_shared<MethodsFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file")->capture_default_str();
  app.add_option("--store", f->store, "Store URL (default: the one the last run used)");
  app.add_option("--run", f->run, "An earlier run (its id, or the start of it: berth runs)");
  return [f] { return run_methods(*f); };
}

}  // namespace berth::cli
