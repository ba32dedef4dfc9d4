// berth log: a step's output, kept by the run that ran it (spec 04 §7.3); with -f, a
// running step's followed as it comes (spec 04 §7.6).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/log_follow.h"
#include "cli/read_back.h"
#include "pipeline/report_file.h"

namespace berth::cli {
namespace {

struct LogFlags {
  std::vector<std::string> args;  // [PIPELINE] STEP
  std::string store;
  std::string cache;
  bool follow = false;
};

int run_log(const LogFlags& f) {
  if (f.args.empty() || f.args.size() > 2) {
    return report(Error(Errc::kInvalidInput, "berth log: give [PIPELINE] STEP"));
  }
  const std::string pipeline = f.args.size() == 2 ? f.args[0] : "pipeline.toml";
  // A step running now is followed until it ends; one that is not, printed as stored.
  if (f.follow) {
    bool stored = false;
    auto code =
        follow_running_step(pipeline::pipeline_dir_for(pipeline, f.cache), f.args.back(), &stored);
    if (code && stored) {
      auto text = step_log(pipeline, f.args.back(), f.store, f.cache);
      if (text.ok()) std::fwrite(text->data(), 1, text->size(), stdout);
    }
    if (code) return *code;
  }
  auto text = step_log(pipeline, f.args.back(), f.store, f.cache);
  if (!text.ok()) return report(text.error().with_context("berth log"));
  std::fwrite(text->data(), 1, text->size(), stdout);
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
  app.add_flag("-f,--follow", f->follow,
               "Follow a running step's output until it ends, from any terminal; a step "
               "not running now prints its stored log");
  return [f] { return run_log(*f); };
}

}  // namespace berth::cli
