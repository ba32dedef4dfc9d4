// The live board (live_board.h).
#include "pipeline/live_board.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

int64_t ms_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// Whether the board's run is alive: "" when it is (or cannot be checked from this
// host), else why it is taken for gone.
std::string why_gone(const Board& b) {
  if (b.host != this_host() || b.pid <= 0) return {};
  if (::kill(static_cast<pid_t>(b.pid), 0) != 0 && errno == ESRCH) {
    return fmt::format("its process {} on {} is gone", b.pid, b.host);
  }
  // The pid was given to another process since (the start times differ).
  uint64_t now = process_start_ticks(b.pid);
  if (b.pid_start != 0 && now != 0 && now != b.pid_start) {
    return fmt::format("its process {} on {} is gone (the pid is another process's now)", b.pid,
                       b.host);
  }
  return {};
}

}  // namespace

std::string board_path(const std::string& pipeline_dir) { return pipeline_dir + "/live.json"; }

std::string board_json(const Board& b) {
  json steps = json::array();
  for (const auto& s : b.running) {
    steps.push_back({{"step", s.step},
                     {"node", s.node},
                     {"cores", s.cores},
                     {"gpus", s.gpus},
                     {"since_ms", s.since_ms},
                     {"output", s.output}});
  }
  json j = {{"version", kBoardFormatVersion},
            {"pipeline", b.pipeline},
            {"pid", b.pid},
            {"pid_start", b.pid_start},
            {"host", b.host},
            {"started_ms", b.started_ms},
            {"ended_ms", b.ended_ms},
            {"running", std::move(steps)},
            {"total", b.total},
            {"done", b.done},
            {"waiting", b.waiting},
            {"deferred", b.deferred}};
  return j.dump() + "\n";
}

namespace {

// A board's field of the type the board writes, or why not: a board is a file another
// process wrote, and reading it never throws nor converts a number out of range.
struct BoardFields {
  const json& j;
  std::string missing;  // the first field absent or of another type
  std::string text(const char* k) {
    auto it = j.find(k);
    if (it != j.end() && it->is_string()) return it->get<std::string>();
    if (missing.empty()) missing = k;
    return {};
  }
  int64_t integer(const char* k) {
    auto it = j.find(k);
    if (it != j.end() && it->is_number_integer()) return it->get<int64_t>();
    if (missing.empty()) missing = k;
    return 0;
  }
  uint64_t count(const char* k) {
    auto it = j.find(k);
    if (it != j.end() && it->is_number_unsigned()) return it->get<uint64_t>();
    if (missing.empty()) missing = k;
    return 0;
  }
  const json* list(const char* k) {
    auto it = j.find(k);
    if (it != j.end() && it->is_array()) return &*it;
    if (missing.empty()) missing = k;
    return nullptr;
  }
};

}  // namespace

Result<Board> parse_board(std::string_view text, const std::string& path) {
  auto bad = [&path](std::string_view why) {
    return fail(Errc::kInvalidInput, fmt::format("{}: not a live board: {}", path, why));
  };
  // A board nests three levels; a file nested far deeper is no board, and is not
  // parsed (its destruction would recurse as deep).
  if (str::json_deeper_than(text, 16)) return bad("nested too deep");
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return bad("not a JSON object");
  BoardFields f{j, {}};
  if (f.integer("version") != kBoardFormatVersion) return bad("unknown version");
  Board b;
  b.pipeline = f.text("pipeline");
  b.pid = f.integer("pid");
  b.pid_start = f.count("pid_start");
  b.host = f.text("host");
  b.started_ms = f.integer("started_ms");
  b.ended_ms = f.integer("ended_ms");
  b.total = f.count("total");
  b.done = f.count("done");
  b.waiting = f.count("waiting");
  b.deferred = f.count("deferred");
  const json* running = f.list("running");
  for (size_t i = 0; running != nullptr && i < running->size(); ++i) {
    const json& e = (*running)[i];
    if (!e.is_object()) return bad("running: an entry is not an object");
    BoardFields s{e, {}};
    BoardStep step{s.text("step"), s.text("node"), {}, {}, s.integer("since_ms"),
                   s.text("output")};
    for (const char* k : {"cores", "gpus"}) {
      const json* l = s.list(k);
      for (size_t n = 0; l != nullptr && n < l->size(); ++n) {
        const json& v = (*l)[n];
        bool core = std::string_view(k) == "cores";
        if (core && v.is_number_integer() && v.get<int64_t>() >= 0 &&
            v.get<int64_t>() <= INT32_MAX) {
          step.cores.push_back(static_cast<int>(v.get<int64_t>()));
        } else if (!core && v.is_string()) {
          step.gpus.push_back(v.get<std::string>());
        } else {
          return bad(fmt::format("running: '{}' holds a value that is not one", k));
        }
      }
    }
    if (!s.missing.empty()) return bad(fmt::format("running: '{}' missing or mistyped", s.missing));
    b.running.push_back(std::move(step));
  }
  if (!f.missing.empty()) return bad(fmt::format("'{}' missing or mistyped", f.missing));
  return b;
}

Result<BoardRead> read_board(const std::string& pipeline_dir) {
  BoardRead r;
  r.path = board_path(pipeline_dir);
  auto text = files::read_file(r.path);
  if (!text.ok()) {
    if (text.error().code() == Errc::kNotFound) return r;
    return text.error();
  }
  BERTH_TRY(r.board, parse_board(*text, r.path));
  r.stale = r.board.ended_ms != 0 ? std::string() : why_gone(r.board);
  r.state = r.board.ended_ms != 0 ? BoardRead::State::kEnded
            : r.stale.empty()     ? BoardRead::State::kRunning
                                  : BoardRead::State::kStale;
  return r;
}

LiveBoard::LiveBoard(std::string pipeline_dir, std::string pipeline, const Clock& clock)
    : dir_(std::move(pipeline_dir)), clock_(clock) {
  board_.pipeline = fs::absolute(pipeline).lexically_normal().string();
  board_.pid = ::getpid();
  board_.pid_start = process_start_ticks(board_.pid);
  board_.host = this_host();
  outputs_ = fmt::format("{}/live/{}.{}", dir_, board_.host, board_.pid);
}

void LiveBoard::begin() {
  board_.started_ms = ms_of(clock_.wall());
  // Output directories of runs of this host that are gone (killed) go first; another
  // host's runs are its own to judge.
  std::error_code ec;
  const std::string mine = board_.host + ".";
  for (const auto& d : fs::directory_iterator(dir_ + "/live", ec)) {
    std::string name = d.path().filename().string();
    if (name.rfind(mine, 0) != 0) continue;
    auto pid = str::parse_uint(std::string_view(name).substr(mine.size()), 1u << 30);
    // Gone for a while, not just now: a follower of a step of the run that just ended
    // still reads its status (live_exit_status()).
    auto when = fs::last_write_time(d.path(), ec);
    bool recent = !ec && fs::file_time_type::clock::now() - when < kKeepEndedRuns;
    if (pid.ok() && !recent && ::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH) {
      fs::remove_all(d.path(), ec);
    }
  }
  fs::create_directories(outputs_, ec);
  if (ec) {
    std::lock_guard<std::mutex> lock(mu_);
    problem_ = fmt::format("cannot create {}: {}", outputs_, ec.message());
  }
  // Every step's exit status goes into one file of the run's, a line each: a run of
  // 10^4 steps makes one file for them, not 10^4 (live_exit_status()).
  exits_fd_ = ::open((outputs_ + "/exits").c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  thread_ = std::thread([this] { flusher(); });
}

LiveBoard::~LiveBoard() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    board_.running.clear();
    board_.ended_ms = ms_of(clock_.wall());
  }
  wake_.notify_all();
  thread_.join();
  if (exits_fd_ >= 0) ::close(exits_fd_);
  // The outputs go; each step's exit status stays, a few bytes, for a follower that
  // looks after the run ended (the next run of this host sweeps them).
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(outputs_, ec)) {
    if (f.path().extension() == ".log") fs::remove(f.path(), ec);
  }
}

LiveBoard::Entry LiveBoard::started(const std::string& step, const std::string& node,
                                    const place::Placement& where) {
  Entry e;
  BoardStep s;
  s.step = step;
  s.node = node;
  for (const auto& set : where.cores) s.cores.insert(s.cores.end(), set.begin(), set.end());
  s.gpus = where.gpu_ids;
  s.since_ms = ms_of(clock_.wall());
  // The file is made when the step first prints (write()): most steps of a large run
  // print nothing, and a file each would be 10^4 files made and removed. A reader
  // finds none until then. outputs_ and the ids are this object's alone, read
  // without the lock.
  e.id = next_id_.fetch_add(1);
  e.output = fmt::format("{}/{}.log", outputs_, e.id);
  s.output = e.output;
  {
    std::lock_guard<std::mutex> lock(mu_);
    board_.running.push_back(std::move(s));
    ids_.push_back(e.id);
    dirty_ = true;
  }
  wake_.notify_all();
  return e;
}

void LiveBoard::write(Entry& e, std::string_view text) {
  if (e.fd < 0 && !e.tried) {
    e.tried = true;
    e.fd = ::open(e.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  }
  if (e.fd < 0) return;
  // Best effort: a full disk loses the live copy only (the report keeps the output).
  (void)files::write_all(e.fd, text.data(), text.size(), e.output);
}

void LiveBoard::ended(Entry& e, int exit_code) {
  if (e.fd >= 0) ::close(e.fd);
  e.fd = -1;
  // The exit status before the board forgets the step: a follower that sees it gone
  // finds the status there. One short line, appended whole (O_APPEND).
  if (exits_fd_ >= 0) {
    std::string line = fmt::format("{} {}\n", e.id, exit_code);
    (void)files::write_all(exits_fd_, line.data(), line.size(), outputs_ + "/exits");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t k = 0; k < ids_.size(); ++k) {
      if (ids_[k] != e.id) continue;
      ids_.erase(ids_.begin() + static_cast<std::ptrdiff_t>(k));
      board_.running.erase(board_.running.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    }
    dirty_ = true;
  }
  wake_.notify_all();
}

void LiveBoard::progress(const Progress& p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t waiting = p.total - std::min(p.total, p.done + p.running + p.deferred);
    if (board_.total == p.total && board_.done == p.done && board_.waiting == waiting &&
        board_.deferred == p.deferred) {
      return;
    }
    board_.total = p.total;
    board_.done = p.done;
    board_.waiting = waiting;
    board_.deferred = p.deferred;
    dirty_ = true;
  }
  wake_.notify_all();
}

void LiveBoard::flusher() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return dirty_ || stop_; });
    Board copy = board_;
    dirty_ = false;
    bool last = stop_;
    lock.unlock();
    write_now(copy);
    if (last) return;
    lock.lock();
    // At most one write per interval, however many steps start meanwhile; the end of
    // the run does not wait for it.
    wake_.wait_for(lock, kBoardInterval, [this] { return stop_; });
  }
}

void LiveBoard::write_now(const Board& b) {
  ++writes_;
  auto w = files::write_file_atomic(board_path(dir_), board_json(b), false);
  if (w.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);  // called without it: problem() reads it under it
  if (problem_.empty()) problem_ = w.error().message();
}

std::optional<int> live_exit_status(const std::string& output) {
  // <dir>/<id>.log: its status is the line "<id> <status>" of <dir>/exits.
  fs::path p(output);
  if (p.extension() != ".log") return std::nullopt;
  const std::string id = p.stem().string();
  auto text = files::read_file((p.parent_path() / "exits").string(), 64 << 20);
  if (!text.ok()) return std::nullopt;
  for (auto line : str::split(*text, '\n')) {
    auto sp = line.find(' ');
    if (sp == std::string_view::npos || line.substr(0, sp) != id) continue;
    auto code = str::parse_uint(str::trim(line.substr(sp + 1)), 255);
    return code.ok() ? static_cast<int>(*code) : 1;
  }
  return std::nullopt;
}

uint64_t process_start_ticks(int64_t pid) {
  auto text = files::read_file(fmt::format("/proc/{}/stat", pid), 4096);
  if (!text.ok()) return 0;
  // The command name, in parentheses, may hold spaces: fields are counted after it.
  size_t close = text->rfind(')');
  if (close == std::string::npos) return 0;
  auto fields = str::split(std::string_view(*text).substr(close + 1), ' ');
  // Field 22 (starttime); the first after ')' is the empty one before field 3.
  if (fields.size() <= 20) return 0;
  auto ticks = str::parse_uint(fields[20], UINT64_MAX);
  return ticks.ok() ? *ticks : 0;
}

std::string span_text(int64_t ms) {
  int64_t s = std::max<int64_t>(0, ms / 1000);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}h {:02}m", s / 3600, (s / 60) % 60);
}

}  // namespace berth::pipeline
