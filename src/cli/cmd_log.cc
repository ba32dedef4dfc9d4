// berth log: a step's output, kept by the run that ran it (spec 04 §7.3).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/last_run.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

struct LogFlags {
  std::vector<std::string> args;  // [PIPELINE] STEP
  std::string store;
  std::string cache;
};

int run_log(const LogFlags& f) {
  if (f.args.empty() || f.args.size() > 2) {
    return report(Error(Errc::kInvalidInput, "berth log: give [PIPELINE] STEP"));
  }
  const std::string pipeline = f.args.size() == 2 ? f.args[0] : "pipeline.toml";
  const std::string& name = f.args.back();
  // 1. The step in the last run's report: its log is an object named there.
  std::string path = last_run_path(pipeline, f.cache);
  auto j = read_last_run(path, pipeline);
  if (!j.ok()) return report(j.error().with_context("berth log"));
  const nlohmann::json* step = nullptr;
  if (j->contains("steps") && (*j)["steps"].is_array()) {
    for (const auto& s : (*j)["steps"]) {
      if (s.is_object() && s.value("name", "") == name) step = &s;
    }
  }
  // A step a targeted last run did not touch: as the earlier runs left it.
  std::vector<nlohmann::json> whole;
  if (step == nullptr && j->contains("targets")) {
    if (auto h = open_history(f.store, pipeline, f.cache); h.ok()) {
      whole = pipeline::whole_pipeline_steps(*h->store, *j, h->runs);
      for (const auto& s : whole) {
        if (s.value("name", "") == name) step = &s;
      }
    }
  }
  if (step == nullptr) {
    return report(Error(Errc::kNotFound, fmt::format("berth log: the last run of {} ({}) has no "
                                                     "step '{}'",
                                                     pipeline, path, str::printable(name))));
  }
  std::string object = step->value("log", "");
  if (object.empty()) {
    std::string state = step->value("state", "");
    return report(Error(
        Errc::kNotFound,
        fmt::format("berth log: step '{}' has no log: it {} in the last run of {}{}",
                    str::printable(name),
                    state == "skipped" || state == "refused" ? "was " + state + " and never ran"
                                                             : "was " + state,
                    pipeline,
                    state == "cached" ? " and its row, written before logs were kept, names none"
                                      : "")));
  }
  // 2. The object, verified, from the store the run used.
  auto store = open_run_store(f.store, *j, pipeline);
  if (!store.ok()) return report(store.error());
  auto got = (*store)->get_object(object);
  if (!got.ok()) return report(got.error());
  if (!got->present()) {
    return report(Error(Errc::kNotFound,
                        got->problem.empty()
                            ? fmt::format("berth log: step '{}': its log {} is not in {}",
                                          str::printable(name), object, (*store)->describe())
                            : got->problem));
  }
  std::fwrite(got->bytes.data(), 1, got->bytes.size(), stdout);
  return kExitOk;
}

}  // namespace

std::function<int()> setup_log(CLI::App& app) {
  auto f = std::make_shared<LogFlags>();
  app.add_option("args", f->args,
                 "[PIPELINE] STEP: a step of the pipeline's last run (PIPELINE: pipeline.toml)")
      ->expected(1, 2);
  app.add_option("--store", f->store, "Store URL (default: the one the run used)");
  app.add_option("--cache", f->cache,
                 "The run's cache directory, where a worker's report is (default: beside the "
                 "pipeline)");
  return [f] { return run_log(*f); };
}

}  // namespace berth::cli
