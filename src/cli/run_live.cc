// A run's live board (run_live.h).
#include "cli/run_live.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "pipeline/live_status.h"
#include "pipeline/report_file.h"
#include "util/clock.h"

namespace berth::cli {
namespace {

namespace fs = std::filesystem;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             Clock::real().wall().time_since_epoch())
      .count();
}

}  // namespace

std::unique_ptr<pipeline::LiveBoard> run_live_board(const std::string& pipeline,
                                                    const std::string& cache, bool worker,
                                                    bool dry_run) {
  if (dry_run || (worker && cache.empty())) return nullptr;
  const std::string dir = pipeline::pipeline_dir_for(pipeline, cache);
  // The pipelines beside this one share its cache directory, and a run holds the
  // cache's index while it runs: every run on a board there is one this run waits for.
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(fs::path(dir).parent_path(), ec)) {
    auto read = pipeline::read_board(d.path().string());
    if (!read.ok() || read->state != pipeline::BoardRead::State::kRunning ||
        read->board.pid == ::getpid()) {
      continue;
    }
    std::fprintf(stderr,
                 "berth: waiting for another run, which holds the cache index this run needs: "
                 "%s (%s)\n",
                 read->board.pipeline.c_str(),
                 pipeline::run_holder_text(read->board, now_ms()).c_str());
  }
  // A second run of one pipeline writes its board only once it runs (begin()), when
  // the first has ended and said so (cmd_run ends the board before the session): until
  // then `berth status` shows the first.
  return std::make_unique<pipeline::LiveBoard>(dir, pipeline, Clock::real());
}

std::function<void(const pipeline::Progress&)> with_board(
    pipeline::LiveBoard* board, std::function<void(const pipeline::Progress&)> line) {
  if (board == nullptr) return line;
  return [board, line = std::move(line)](const pipeline::Progress& p) {
    board->progress(p);
    if (line) line(p);
  };
}

}  // namespace berth::cli
