// What runs now, from the live board (live_status.h).
#include "pipeline/live_status.h"

#include <fmt/format.h>

#include <chrono>

#include "pipeline/report_file.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::ordered_json;

std::string time_text(int64_t ms) {
  return utc_text(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
}

double seconds_between(int64_t from_ms, int64_t to_ms) {
  return static_cast<double>(std::max<int64_t>(0, to_ms - from_ms)) / 1000.0;
}

const char* state_name(BoardRead::State s) {
  switch (s) {
    case BoardRead::State::kRunning:
      return "running";
    case BoardRead::State::kEnded:
      return "ended";
    case BoardRead::State::kStale:
      return "stale";
    case BoardRead::State::kNone:
      break;
  }
  return "none";
}

// "3 steps wait (for cores or for their inputs), 12 of 20 done", or "" when none waits
// and none is counted yet.
std::string waiting_text(const Board& b) {
  if (b.total == 0) return {};
  std::string s = b.waiting == 0
                      ? std::string("nothing waits")
                      : fmt::format("{} step{} wait{} (for cores or for inputs)", b.waiting,
                                    b.waiting == 1 ? "" : "s", b.waiting == 1 ? "s" : "");
  if (b.deferred != 0) s += fmt::format(", {} left to other workers", b.deferred);
  return s + fmt::format("; {} of {} done", b.done, b.total);
}

}  // namespace

Result<BoardRead> read_pipeline_board(const std::string& pipeline, const std::string& cache) {
  if (!files::exists(pipeline)) {
    return fail(Errc::kNotFound,
                fmt::format("{}: no such pipeline file", str::printable(pipeline)));
  }
  return read_board(pipeline_dir_for(pipeline, cache));
}

std::string run_holder_text(const Board& b, int64_t now_ms) {
  return fmt::format("pid {} on {}, running since {} ({})", b.pid, b.host, time_text(b.started_ms),
                     span_text(now_ms - b.started_ms));
}

json live_status_json(const std::string& pipeline, const BoardRead& read, int64_t now_ms) {
  const Board& b = read.board;
  const bool none = read.state == BoardRead::State::kNone;
  const bool running = read.state == BoardRead::State::kRunning;
  json j = {{"pipeline", pipeline}, {"board", read.path}, {"state", state_name(read.state)}};
  j["run"] =
      none ? json(nullptr)
           : json{{"pid", b.pid},
                  {"host", b.host},
                  {"started", time_text(b.started_ms)},
                  {"for_s", seconds_between(b.started_ms, b.ended_ms != 0 ? b.ended_ms : now_ms)}};
  json steps = json::array();
  for (const auto& s : running ? b.running : std::vector<BoardStep>{}) {
    steps.push_back({{"step", s.step},
                     {"node", s.node},
                     {"cores", s.cores},
                     {"gpus", s.gpus},
                     {"since", time_text(s.since_ms)},
                     {"for_s", seconds_between(s.since_ms, now_ms)},
                     {"output", s.output}});
  }
  j["running"] = std::move(steps);
  j["waiting"] = running ? b.waiting : 0;
  j["done"] = b.done;
  j["total"] = b.total;
  j["deferred"] = running ? b.deferred : 0;
  j["ended"] = b.ended_ms != 0 ? json(time_text(b.ended_ms)) : json(nullptr);
  j["stale"] = read.state == BoardRead::State::kStale ? json(read.stale) : json(nullptr);
  return j;
}

std::string live_status_text(const std::string& pipeline, const BoardRead& read, int64_t now_ms) {
  const Board& b = read.board;
  switch (read.state) {
    case BoardRead::State::kNone:
      return fmt::format("{}: nothing is running (no run has kept a live board in {})\n", pipeline,
                         read.path);
    case BoardRead::State::kEnded:
      return fmt::format("{}: nothing is running; the last run (pid {} on {}) ended {} ({} ago)\n",
                         pipeline, b.pid, b.host, time_text(b.ended_ms),
                         span_text(now_ms - b.ended_ms));
    case BoardRead::State::kStale:
      return fmt::format(
          "{}: nothing is running; the live board {} is stale: the run that kept it (started "
          "{}) never said it ended, and {}\n",
          pipeline, read.path, time_text(b.started_ms), read.stale);
    case BoardRead::State::kRunning:
      break;
  }
  std::string out = fmt::format("{}: a run is on ({})\n", pipeline, run_holder_text(b, now_ms));
  if (b.running.empty()) out += "  no step is running at this moment\n";
  for (const auto& s : b.running) {
    std::string gpus = s.gpus.empty() ? "" : ", GPUs " + str::join(s.gpus, ",");
    out += fmt::format("  {}  on {}, cores {}{}, for {}\n", s.step, s.node,
                       idset::encode_ids(s.cores), gpus, span_text(now_ms - s.since_ms));
  }
  if (std::string w = waiting_text(b); !w.empty()) out += "  " + w + "\n";
  return out;
}

}  // namespace berth::pipeline
