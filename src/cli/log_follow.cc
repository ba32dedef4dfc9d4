// `berth log -f` on a running step (log_follow.h).
#include "cli/log_follow.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "pipeline/live_board.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

// How often the file is looked at for more; the board, which changes less, every
// kBoardEvery looks.
constexpr std::chrono::milliseconds kPoll{100};
constexpr int kBoardEvery = 5;

// Copies what `fd` holds past where it was read to stdout.
void drain(int fd) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::fwrite(buf, 1, static_cast<size_t>(n), stdout);
  }
  std::fflush(stdout);
}

}  // namespace

std::optional<int> follow_running_step(const std::string& pipeline_dir, const std::string& step,
                                       bool* stored) {
  *stored = false;
  auto read = pipeline::read_board(pipeline_dir);
  if (!read.ok() || read->state != pipeline::BoardRead::State::kRunning) return std::nullopt;
  std::string output;
  for (const auto& s : read->board.running) {
    if (s.step == step) output = s.output;
  }
  if (output.empty()) return std::nullopt;
  // The file is made at the step's first output: until then there is nothing to read.
  int fd = -1;
  auto drain_what_is_there = [&fd, &output] {
    if (fd < 0) fd = ::open(output.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) drain(fd);
  };
  auto done = [&fd](std::optional<int> code) {
    if (fd >= 0) ::close(fd);
    return code;
  };
  const int64_t pid = read->board.pid;
  for (int looks = 1;; ++looks) {
    drain_what_is_there();
    // Its exit status is written after its last output: what is left is read once more.
    if (auto code = pipeline::live_exit_status(output)) {
      drain_what_is_there();
      // No file, and the run over: its output files went with it, and what the step
      // printed, if anything, is its stored log (the caller prints it).
      if (fd < 0) {
        auto now = pipeline::read_board(pipeline_dir);
        *stored = !now.ok() || now->state != pipeline::BoardRead::State::kRunning ||
                  now->board.pid != pid;
      }
      return done(*code);
    }
    if (looks % kBoardEvery == 0) {
      auto again = pipeline::read_board(pipeline_dir);
      bool gone = !again.ok() || again->state != pipeline::BoardRead::State::kRunning ||
                  again->board.pid != pid;
      if (gone) {
        drain_what_is_there();
        // Its status may have come between the look above and the board's: it is kept.
        if (auto code = pipeline::live_exit_status(output)) {
          *stored = fd < 0;
          return done(*code);
        }
        if (again.ok() && again->state == pipeline::BoardRead::State::kStale) {
          std::fprintf(stderr, "berth: the run of step '%s' ended without it: %s\n",
                       str::printable(step).c_str(), again->stale.c_str());
        } else {
          std::fprintf(stderr, "berth: the run of step '%s' ended; its status is in its report\n",
                       str::printable(step).c_str());
        }
        return done(1);
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace berth::cli
