// The live board (live_board.h) and what is told from it (live_status.h).
#include "pipeline/live_board.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "pipeline/live_status.h"
#include "util/fake_clock_for_test.h"
#include "util/files.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "berth-live.XXXXXX").string();
  return ::mkdtemp(tmpl.data());
}

// Waits (up to 5 s) until the board in `dir` satisfies `ok`.
bool board_becomes(const std::string& dir, const std::function<bool(const BoardRead&)>& ok) {
  for (int i = 0; i < 500; ++i) {
    auto r = read_board(dir);
    if (r.ok() && ok(*r)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A pid no process has: a child's, reaped.
pid_t dead_pid() {
  pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st = 0;
  ::waitpid(p, &st, 0);
  return p;
}

Board sample() {
  Board b;
  b.pipeline = "/w/pipeline.toml";
  b.pid = ::getpid();
  b.pid_start = process_start_ticks(b.pid);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  b.host = host;
  b.started_ms = 1'700'000'000'000;
  b.running = {{"count-a", host, {2, 3}, {"0"}, 1'700'000'060'000, "/w/live/0.log"}};
  b.total = 10;
  b.done = 4;
  b.waiting = 5;
  return b;
}

TEST(LiveBoard, BoardRoundTripsAndRefusesOtherText) {
  Board b = sample();
  auto back = parse_board(board_json(b), "live.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, b);
  for (const char* bad : {"", "[]", R"({"version":2})", R"({"version":1,"pid":"x"})"}) {
    auto r = parse_board(bad, "/w/live.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("/w/live.json"), std::string::npos);
  }
}

TEST(LiveBoard, ReadJudgesNoneRunningEndedAndStale) {
  std::string dir = temp_dir();
  auto none = read_board(dir);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->state, BoardRead::State::kNone);

  Board b = sample();
  ASSERT_TRUE(files::write_file_atomic(board_path(dir), board_json(b)).ok());
  EXPECT_EQ(read_board(dir)->state, BoardRead::State::kRunning);

  b.pid = dead_pid();
  ASSERT_TRUE(files::write_file_atomic(board_path(dir), board_json(b)).ok());
  auto stale = read_board(dir);
  EXPECT_EQ(stale->state, BoardRead::State::kStale);
  EXPECT_NE(stale->stale.find(std::to_string(b.pid)), std::string::npos) << stale->stale;

  // Our pid, but another process's start time: the pid was reused.
  b.pid = ::getpid();
  b.pid_start += 1;
  ASSERT_TRUE(files::write_file_atomic(board_path(dir), board_json(b)).ok());
  EXPECT_EQ(read_board(dir)->state, BoardRead::State::kStale);

  // Another host's run cannot be checked from here: taken at its word.
  b.pid = dead_pid();
  b.host = "elsewhere.invalid";
  ASSERT_TRUE(files::write_file_atomic(board_path(dir), board_json(b)).ok());
  EXPECT_EQ(read_board(dir)->state, BoardRead::State::kRunning);

  b.ended_ms = b.started_ms + 5000;
  ASSERT_TRUE(files::write_file_atomic(board_path(dir), board_json(b)).ok());
  EXPECT_EQ(read_board(dir)->state, BoardRead::State::kEnded);
  fs::remove_all(dir);
}

TEST(LiveBoard, AStepIsShownWithItsOutputUntilItEnds) {
  std::string dir = temp_dir();
  FakeClock clock;
  place::Placement where;
  where.nodes = {"n1"};
  where.cores = {{4, 5}};
  where.gpu_ids = {"1"};
  std::string output;
  {
    LiveBoard board(dir, "/w/pipeline.toml", clock);
    board.begin();
    LiveBoard::Entry e = board.started("count-a", "n1", where);
    output = e.output;
    LiveBoard::write(e, "line one\n");
    ASSERT_TRUE(board_becomes(dir, [](const BoardRead& r) { return !r.board.running.empty(); }));
    auto r = read_board(dir);
    EXPECT_EQ(r->state, BoardRead::State::kRunning);
    const BoardStep& s = r->board.running.at(0);
    EXPECT_EQ(s.step, "count-a");
    EXPECT_EQ(s.node, "n1");
    EXPECT_EQ(s.cores, (std::vector<int>{4, 5}));
    EXPECT_EQ(s.gpus, (std::vector<std::string>{"1"}));
    EXPECT_EQ(s.output, output);
    EXPECT_EQ(*files::read_file(output), "line one\n");
    EXPECT_FALSE(live_exit_status(output));

    board.progress({.total = 3, .done = 1, .running = 1});
    board.ended(e, 3);
    EXPECT_EQ(live_exit_status(output), 3);
    ASSERT_TRUE(board_becomes(dir, [](const BoardRead& r) { return r.board.running.empty(); }));
    auto after = read_board(dir);
    EXPECT_EQ(after->board.waiting, 1u);
    EXPECT_EQ(after->board.done, 1u);
  }
  // The run ended: said on the board; its output gone, its exit status kept.
  auto ended = read_board(dir);
  EXPECT_EQ(ended->state, BoardRead::State::kEnded);
  EXPECT_NE(ended->board.ended_ms, 0);
  EXPECT_FALSE(files::exists(output));
  EXPECT_EQ(live_exit_status(output), 3);
  fs::remove_all(dir);
}

// Steps that print nothing make no file: a run of many leaves one `exits` file with a
// line each, and each status is found by its own id, not a neighbour's.
TEST(LiveBoard, QuietStepsMakeNoFileAndTheirStatusesShareOne) {
  std::string dir = temp_dir();
  FakeClock clock;
  place::Placement where;
  where.nodes = {"n1"};
  where.cores = {{0}};
  std::vector<std::string> outputs;
  {
    LiveBoard board(dir, "/w/pipeline.toml", clock);
    board.begin();
    for (int i = 0; i < 12; ++i) {
      LiveBoard::Entry e = board.started(fmt::format("q{}", i), "n1", where);
      outputs.push_back(e.output);
      if (i == 5) LiveBoard::write(e, "only five talks\n");
      board.ended(e, i);
    }
    size_t files_there = 0;
    for (const auto& f : fs::directory_iterator(fs::path(outputs[0]).parent_path())) {
      (void)f;
      ++files_there;
    }
    EXPECT_EQ(files_there, 2u);  // exits, and the one step's output
    EXPECT_FALSE(files::exists(outputs[4]));
    EXPECT_EQ(*files::read_file(outputs[5]), "only five talks\n");
  }
  for (int i = 0; i < 12; ++i) EXPECT_EQ(live_exit_status(outputs[i]), i) << i;
  EXPECT_FALSE(live_exit_status(fs::path(outputs[0]).parent_path().string() + "/99.log"));
  fs::remove_all(dir);
}

TEST(LiveBoard, ManyStepsStartingAtOnceCostAFewWrites) {
  std::string dir = temp_dir();
  FakeClock clock;
  place::Placement where;
  where.nodes = {"n1"};
  where.cores = {{0}};
  auto t0 = std::chrono::steady_clock::now();
  size_t writes = 0;
  {
    LiveBoard board(dir, "/w/pipeline.toml", clock);
    board.begin();
    std::vector<LiveBoard::Entry> entries;
    for (int i = 0; i < 300; ++i) {
      entries.push_back(board.started(fmt::format("s{}", i), "n1", where));
      LiveBoard::write(entries.back(), "a line of output\n");
      board.progress({.total = 300, .done = 0, .running = static_cast<size_t>(i + 1)});
    }
    for (auto& e : entries) board.ended(e, 0);
    writes = board.writes();
  }
  auto took = std::chrono::steady_clock::now() - t0;
  // One write to begin, then at most one per interval (and one more at the end).
  size_t most = 2 + static_cast<size_t>(took / kBoardInterval);
  EXPECT_LE(writes, most) << "in " << std::chrono::duration<double>(took).count() << " s";
  EXPECT_EQ(read_board(dir)->state, BoardRead::State::kEnded);
  fs::remove_all(dir);
}

TEST(LiveBoard, ABoardIsNotWrittenBeforeTheRunBegins) {
  std::string dir = temp_dir();
  FakeClock clock;
  { LiveBoard board(dir, "/w/pipeline.toml", clock); }
  EXPECT_FALSE(files::exists(board_path(dir)));
  fs::remove_all(dir);
}

TEST(LiveStatus, TellsTheRunItsStepsAndWhatWaits) {
  BoardRead r;
  r.state = BoardRead::State::kRunning;
  r.path = "/w/live.json";
  r.board = sample();
  const int64_t now = 1'700'000'185'000;
  std::string text = live_status_text("pipeline.toml", r, now);
  EXPECT_NE(text.find("a run is on (pid "), std::string::npos) << text;
  EXPECT_NE(text.find("running since 2023-11-14T22:13:20Z (3m 05s)"), std::string::npos) << text;
  EXPECT_NE(text.find("count-a  on "), std::string::npos) << text;
  EXPECT_NE(text.find(", cores 2-3, GPUs 0, for 2m 05s"), std::string::npos) << text;
  EXPECT_NE(text.find("5 steps wait (for cores or for inputs); 4 of 10 done"), std::string::npos)
      << text;
  auto j = live_status_json("pipeline.toml", r, now);
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["running"][0]["cores"], nlohmann::ordered_json::array({2, 3}));
  EXPECT_EQ(j["running"][0]["for_s"], 125.0);
  EXPECT_EQ(j["waiting"], 5);

  r.state = BoardRead::State::kStale;
  r.stale = "its process 7 on h is gone";
  EXPECT_NE(live_status_text("pipeline.toml", r, now).find("is stale"), std::string::npos);
  j = live_status_json("pipeline.toml", r, now);
  EXPECT_EQ(j["state"], "stale");
  EXPECT_TRUE(j["running"].empty());

  r.state = BoardRead::State::kEnded;
  r.board.ended_ms = now - 60'000;
  EXPECT_NE(
      live_status_text("pipeline.toml", r, now).find("nothing is running; the last run (pid "),
      std::string::npos);
  EXPECT_EQ(live_status_json("pipeline.toml", r, now)["ended"], "2023-11-14T22:15:25Z");
}

}  // namespace
}  // namespace berth::pipeline
