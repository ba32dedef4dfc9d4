// berth status: what a pipeline's run is doing now — its running steps, where, for how
// long, and what waits — from the pipeline's live board (spec 04 §7.6).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "pipeline/live_status.h"
#include "util/clock.h"

namespace berth::cli {
namespace {

struct StatusFlags {
  std::string pipeline = "pipeline.toml";
  std::string cache;
  std::string format = "text";
};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             Clock::real().wall().time_since_epoch())
      .count();
}

int run_status(const StatusFlags& f) {
  auto read = pipeline::read_pipeline_board(f.pipeline, f.cache);
  if (!read.ok()) return report(read.error().with_context("berth status"));
  if (f.format == "json") {
    std::printf("%s\n", pipeline::live_status_json(f.pipeline, *read, now_ms()).dump(2).c_str());
  } else {
    std::fputs(pipeline::live_status_text(f.pipeline, *read, now_ms()).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

std::function<int()> setup_status(CLI::App& app) {
  auto f = std::make_shared<StatusFlags>();
  app.add_option("pipeline", f->pipeline, "PIPELINE: the pipeline file (default: pipeline.toml)")
      ->capture_default_str();
  app.add_option("--cache", f->cache,
                 "The run's cache directory, where a run with --cache keeps its live board "
                 "(default: beside the pipeline)");
  app.add_option("--format", f->format, "Output: text or JSON")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [f] { return run_status(*f); };
}

}  // namespace berth::cli
