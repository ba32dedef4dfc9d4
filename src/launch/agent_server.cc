// The agent (agent_server.h).
#include "launch/agent_server.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "launch/agent_wire.h"
#include "launch/job.h"
#include "launch/read_only.h"

namespace berth::launch::agent {
namespace {

using json = nlohmann::json;

// The agent's side of the wire: framed messages to the run, one writer at a time.
class Outbox {
 public:
  Outbox(int fd, std::string node) : fd_(fd), node_(std::move(node)) {}
  // False once a write failed: the run is gone.
  bool send(const json& m) {
    std::string text = m.dump(-1, ' ', false, json::error_handler_t::replace);
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return false;
    for (const std::string& line : frame(node_, text)) {
      const char* p = line.data();
      size_t left = line.size();
      while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          broken_ = true;
          return false;
        }
        p += n;
        left -= static_cast<size_t>(n);
      }
    }
    return true;
  }
  bool broken() {
    std::lock_guard<std::mutex> lock(mu_);
    return broken_;
  }

 private:
  int fd_;
  std::string node_;
  std::mutex mu_;
  bool broken_ = false;
};

// One job the agent runs, and the descriptor that cancels it.
struct Running {
  int cancel[2] = {-1, -1};
  std::thread thread;
  ~Running() {
    for (int fd : cancel) {
      if (fd >= 0) ::close(fd);
    }
  }
  void cancel_now() const {
    char c = 1;
    [[maybe_unused]] ssize_t w = ::write(cancel[1], &c, 1);
  }
};

class Agent {
 public:
  explicit Agent(ServerOptions o) : o_(std::move(o)), out_(o_.out_fd, o_.node), env_(o_.env) {
    if (::pipe2(broke_, O_CLOEXEC) != 0) broke_[0] = broke_[1] = -1;
  }
  ~Agent() {
    for (int fd : broke_) {
      if (fd >= 0) ::close(fd);
    }
  }

  Served run() {
    json hello = o_.hello;
    hello["t"] = "hello";
    hello["node"] = o_.node;
    if (!out_.send(hello)) return {1, "cannot write to the run", 0};
    std::thread beats([this] { beat(); });
    std::string problem = read_requests();
    // The run is over: every job still running ends now, and is waited for.
    {
      std::lock_guard<std::mutex> lock(mu_);
      ending_ = true;
      for (auto& [id, r] : running_) r->cancel_now();
    }
    stop_.notify_all();
    beats.join();
    join_all();
    return {problem.empty() ? 0 : 1, problem, jobs_};
  }

 private:
  void beat() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!ending_) {
      if (stop_.wait_for(lock, o_.beat, [this] { return ending_; })) break;
      lock.unlock();
      bool ok = out_.send({{"t", "beat"}});
      lock.lock();
      if (!ok) {
        // The run is gone: the reader, waiting for requests, ends now.
        char c = 1;
        [[maybe_unused]] ssize_t w = ::write(broke_[1], &c, 1);
        break;
      }
    }
  }

  // Reads requests until the run's end; "" for an ordinary end, else what broke.
  std::string read_requests() {
    std::string buf;
    char chunk[65536];
    for (;;) {
      pollfd fds[3] = {{o_.in_fd, POLLIN, 0}, {broke_[0], POLLIN, 0}, {o_.stop_fd, POLLIN, 0}};
      if (::poll(fds, o_.stop_fd >= 0 ? 3 : 2, -1) < 0) {
        if (errno == EINTR) continue;
        return std::string("waiting for the run's requests: ") + std::strerror(errno);
      }
      if ((fds[1].revents & POLLIN) || (o_.stop_fd >= 0 && (fds[2].revents & POLLIN))) return "";
      ssize_t n = ::read(o_.in_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::string("reading the run's requests: ") + std::strerror(errno);
      if (n == 0) return "";  // the run ended
      buf.append(chunk, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
        if (!handle(std::string_view(buf).substr(start, nl - start))) return "";
      }
      buf.erase(0, start);
      reap();
      if (out_.broken()) return "";
    }
  }

  // One request; false for "end".
  bool handle(std::string_view line) {
    if (line.empty()) return true;
    auto m = parse_message(line, "a request");
    if (!m.ok()) return true;  // not for anyone: nothing to answer
    const json& r = *m;
    auto to = r.find("to");
    if (to != r.end() && (!to->is_string() || to->get<std::string>() != o_.node)) return true;
    auto t = r.find("t");
    std::string kind = t != r.end() && t->is_string() ? t->get<std::string>() : "";
    if (kind == "end") return false;
    if (kind == "env") set_env(r);
    else if (kind == "run") start(r);
    else if (kind == "cancel") cancel(r);
    return true;
  }

  void set_env(const json& r) {
    auto e = r.find("env");
    if (e == r.end() || !e->is_object()) return;
    Env env;
    for (const auto& [k, v] : e->items()) {
      if (v.is_string()) env.set(k, v.get<std::string>());
    }
    // The variables that name the node are this node's, not the run's.
    for (const char* name : {"HOSTNAME", "SLURMD_NODENAME"}) {
      if (auto mine = o_.env.get(name)) env.set(name, *mine);
    }
    std::lock_guard<std::mutex> lock(mu_);
    env_ = std::move(env);
  }

  static int64_t id_of(const json& r) {
    auto id = r.find("id");
    return id != r.end() && id->is_number_integer() ? id->get<int64_t>() : -1;
  }

  void cancel(const json& r) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = running_.find(id_of(r)); it != running_.end()) it->second->cancel_now();
  }

  void start(const json& r) {
    int64_t id = id_of(r);
    auto spec = r.find("job") != r.end() ? job_from_json(r.at("job"))
                                         : Result<JobSpec>(fail(Errc::kInvalidInput, "no job"));
    if (id < 0 || !spec.ok()) {
      out_.send({{"t", "exit"}, {"id", id},
                 {"error", spec.ok() ? "a job without an id" : spec.error().message()}});
      return;
    }
    auto run = std::make_unique<Running>();
    if (::pipe2(run->cancel, O_CLOEXEC) != 0) {
      out_.send({{"t", "exit"}, {"id", id}, {"error", std::string("pipe: ") + std::strerror(errno)}});
      return;
    }
    JobSpec job = std::move(*spec);
    // Inputs are made read-only where this node allows it (its hello said whether).
    if (!read_only_support().ok()) {
      for (AppSpec& app : job.apps) app.read_only.clear();
    }
    job.own_signals = false;
    job.cancel_fd = run->cancel[0];
    job.stdin_mode = StdinMode::kNone;
    std::lock_guard<std::mutex> lock(mu_);
    if (running_.count(id)) return;  // an id it runs already: not a new job
    Env parent = env_;
    ++jobs_;
    Running* raw = run.get();
    running_[id] = std::move(run);
    raw->thread = std::thread([this, id, job = std::move(job), parent = std::move(parent)] {
      one_job(id, job, parent);
    });
  }

  void one_job(int64_t id, const JobSpec& job, const Env& parent) {
    OutputSinks sinks;
    sinks.out = [this, id](std::string_view text) {
      out_.send({{"t", "out"}, {"id", id}, {"b64", to_base64(text)}});
    };
    sinks.err = sinks.out;
    Spawner& spawner = o_.spawner != nullptr ? *o_.spawner : Spawner::real();
    auto outcome = run_job(job, parent, spawner, sinks);
    if (outcome.ok()) {
      out_.send({{"t", "exit"}, {"id", id}, {"outcome", outcome_to_json(*outcome)}});
    } else {
      out_.send({{"t", "exit"}, {"id", id}, {"error", outcome.error().message()}});
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(id);
  }

  // Joins the threads of jobs that have ended.
  void reap() {
    std::vector<std::unique_ptr<Running>> gone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t id : done_) {
        auto it = running_.find(id);
        if (it == running_.end()) continue;
        gone.push_back(std::move(it->second));
        running_.erase(it);
      }
      done_.clear();
    }
    for (auto& r : gone) r->thread.join();
  }

  void join_all() {
    std::map<int64_t, std::unique_ptr<Running>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(running_);
    }
    for (auto& [id, r] : all) r->thread.join();
  }

  ServerOptions o_;
  Outbox out_;
  std::mutex mu_;
  std::condition_variable stop_;
  bool ending_ = false;
  Env env_;
  std::map<int64_t, std::unique_ptr<Running>> running_;
  std::vector<int64_t> done_;
  int jobs_ = 0;
  int broke_[2] = {-1, -1};  // written when a write to the run failed
};

}  // namespace

Served serve(ServerOptions o) {
  Agent agent(std::move(o));
  return agent.run();
}

}  // namespace berth::launch::agent
