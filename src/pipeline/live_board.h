// The live board: what a run of a pipeline is doing now, in a file other processes
// read (spec 04 §7.6) — `berth status`, `berth log -f`, a second run that must wait.
//
// The board is one JSON file, <pipeline dir>/live.json (pipeline_dir_for()), replaced
// atomically. It names the run (its pid, the pid's start time as the kernel counts it,
// its host, when it began), each running step (node, cores, GPUs, since when, and the
// file its output goes to as it comes), and how many steps wait. A thread of its own
// writes it, only when something changed and at most once per kBoardInterval: a step
// that prints never rewrites it, and a thousand steps starting in one second cost a
// handful of writes. Each step's output is appended, as the step writes it, to
// <pipeline dir>/live/<host>.<pid>/<n>.log (made at its first output: a step that
// prints nothing makes no file), and the line "<n> <status>" of that folder's one
// `exits` file holds its exit status once its processes ended.
// When the run ends the board says so (no steps, "ended") and the outputs go; the exit
// statuses stay until the next run of the pipeline on the host.
//
// A board whose run's process is gone without saying it ended (killed) is stale:
// read_board() says so, and nothing trusts it. A run on another host cannot be checked
// from here and is taken at its word.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "pipeline/report.h"
#include "place/placement.h"
#include "util/clock.h"
#include "util/result.h"

namespace berth::pipeline {

// How long the output folder of a run that is gone is kept before a later run of the
// host removes it: its steps' statuses, for followers that look after it ended.
inline constexpr std::chrono::minutes kKeepEndedRuns{2};
// The least time between two writes of the board.
inline constexpr std::chrono::milliseconds kBoardInterval{200};
// The board format written today (its "version").
inline constexpr int kBoardFormatVersion = 1;

struct BoardStep {
  std::string step;
  std::string node;
  std::vector<int> cores;
  std::vector<std::string> gpus;
  int64_t since_ms = 0;  // wall clock, ms since the epoch, when its processes started
  std::string output;    // the file its output goes to as it comes
  bool operator==(const BoardStep&) const = default;
};

struct Board {
  std::string pipeline;    // the pipeline file, absolute
  int64_t pid = 0;         // the run's process
  uint64_t pid_start = 0;  // its start time in clock ticks after boot (0: unknown)
  std::string host;        // the host it runs on (gethostname)
  int64_t started_ms = 0;  // when the run began
  int64_t ended_ms = 0;    // when it ended; 0 while it runs
  std::vector<BoardStep> running;
  size_t total = 0;     // steps of the run
  size_t done = 0;      // finished, whatever became of them
  size_t waiting = 0;   // neither running nor done: queued for cores, or for inputs
  size_t deferred = 0;  // left to another worker that claimed them
  bool operator==(const Board&) const = default;
};

// The board as written (one JSON object) and read back; parse_board() fails
// (kInvalidInput naming `path`) on anything else, a newer version included.
std::string board_json(const Board& b);
Result<Board> parse_board(std::string_view text, const std::string& path);

// The board file of the pipeline whose own directory is `pipeline_dir`.
std::string board_path(const std::string& pipeline_dir);

struct BoardRead {
  enum class State {
    kNone,     // no board: no run has kept one here
    kRunning,  // a run is on: `board` says what it does
    kEnded,    // the last run ended at board.ended_ms
    kStale,    // the run's process is gone and never said it ended: `stale` says why
  } state = State::kNone;
  Board board;
  std::string path;
  std::string stale;
};

// The board of the pipeline whose own directory is `pipeline_dir`, judged. Fails on a
// board that cannot be read or parsed, naming it.
Result<BoardRead> read_board(const std::string& pipeline_dir);

// Writes the board of one run; thread-safe. Failing to write it never fails the run:
// the board is for watching, and the first problem is kept for problem().
class LiveBoard {
 public:
  // `pipeline_dir`: pipeline_dir_for() of the run's pipeline file `pipeline`. Nothing
  // is written before begin().
  LiveBoard(std::string pipeline_dir, std::string pipeline, const Clock& clock);
  // The run begins: the board is written, and the output folders of this host's runs
  // that are gone are swept.
  void begin();
  // After begin(): says the run ended and removes its steps' output files.
  ~LiveBoard();
  LiveBoard(const LiveBoard&) = delete;
  LiveBoard& operator=(const LiveBoard&) = delete;

  // A running step's entry and its output file. `fd` is -1 when the file could not be
  // made: its output then goes nowhere but the run's own report.
  struct Entry {
    uint64_t id = 0;
    int fd = -1;         // made at the first write()
    bool tried = false;  // whether write() tried to make it
    std::string output;
  };
  // Step `step`'s processes start on `node`, placed on `where` (whose nodes are empty
  // for a step that takes no core: cores = 0).
  Entry started(const std::string& step, const std::string& node, const place::Placement& where);
  // Appends `text` to the step's output file.
  static void write(Entry& e, std::string_view text);
  // Its processes ended with `exit_code` (the shell's convention): its line of `exits`
  // is written,
  // the file closed, and the step leaves the board.
  void ended(Entry& e, int exit_code);
  // How many steps wait and are done.
  void progress(const Progress& p);

  // What kept the board from being written ("" none): the first thing.
  std::string problem() const {
    std::lock_guard<std::mutex> lock(mu_);
    return problem_;
  }
  // How many times the board was written so far.
  size_t writes() const { return writes_.load(); }

 private:
  void flusher();
  void write_now(const Board& b);

  std::string dir_;      // the pipeline's own directory
  std::string outputs_;  // live/<host>.<pid>/
  int exits_fd_ = -1;    // outputs_/exits, every ended step's status
  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  Board board_;
  std::vector<uint64_t> ids_;  // board_.running's entries' ids, in the same order
  std::atomic<uint64_t> next_id_{0};
  bool dirty_ = true;
  bool stop_ = false;
  std::string problem_;
  std::atomic<size_t> writes_{0};
  std::thread thread_;
};

// The exit status of the step whose output file is `output`, from the `exits` file
// beside it;
// nullopt while it runs (or when its run died first).
std::optional<int> live_exit_status(const std::string& output);

// The start time of process `pid` in clock ticks after boot (/proc/<pid>/stat); 0 when
// it cannot be read (no such process, no /proc).
uint64_t process_start_ticks(int64_t pid);

// "2m 05s", "3h 01m", "12s": how long, for a person.
std::string span_text(int64_t ms);

}  // namespace berth::pipeline
