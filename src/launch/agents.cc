// Agents (agents.h).
#include "launch/agents.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "launch/agent_wire.h"
#include "launch/supervised.h"
#include "util/clock.h"
#include "util/strings.h"

namespace berth::launch {

using json = nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

// The most of a line without its newline kept while reading a launcher's output.
constexpr size_t kMaxPartial = size_t{64} << 10;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The last few lines a launcher wrote on stderr: what a lost agent's reason quotes.
void keep_tail(std::deque<std::string>& tail, std::string line) {
  if (line.empty()) return;
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  tail.push_back(std::move(line));
  while (tail.size() > 4) tail.pop_front();
}

}  // namespace

struct Agents::State {
  struct Node {
    size_t channel = 0;
    bool ready = false;
    bool lost = false;
    std::string why;
    json hello;
    Steady::time_point heard;
  };
  struct Pending {
    std::string node;
    const OutputSinks* sinks = nullptr;
    std::optional<Result<JobOutcome>> result;
    int in_sink = 0;  // output being handed to `sinks` now, outside the lock
  };
  struct Channel {
    AgentChannel spec;
    Supervised child;
    int in = -1;        // the launcher's stdin: requests
    int out = -1;       // its stdout: the agents' messages
    int err = -1;       // its stderr
    std::mutex write_mu;
    std::thread reader;
    std::deque<std::string> err_tail;
    std::string started_problem;  // why the launcher did not start
  };

  AgentsOptions o;
  mutable std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, Node, std::less<>> nodes;
  std::map<int64_t, Pending> pending;
  int64_t next_id = 1;
  std::vector<std::unique_ptr<Channel>> channels;
  int wake[2] = {-1, -1};  // written once: the readers stop
  Steady::time_point began;
  bool ending = false;  // the run is ending its agents: their end is not news
  bool started = false;  // wait_started() returned: a loss from now on is news

  Steady::time_point now() const { return Clock::real().steady(); }

  // Writes one request line to a channel (its stdin is non-blocking); false when its
  // launcher no longer reads, or has not taken the line within `silence` (a node that
  // stopped: under srun one stdin feeds every agent). Then every node of the channel
  // is lost: nothing more can reach them.
  bool send(Channel& c, const json& m) {
    std::string line = m.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    bool sent = write_line(c, line);
    if (!sent) {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& n : c.spec.nodes) lose(n, "its launcher no longer takes requests", false);
    }
    return sent;
  }

  bool write_line(Channel& c, const std::string& line) {
    std::lock_guard<std::mutex> lock(c.write_mu);
    const auto by = now() + o.silence;
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      if (c.in < 0) return false;
      ssize_t n = ::send(c.in, p, left, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(by - now()).count();
        pollfd w{c.in, POLLOUT, 0};
        if (left_ms <= 0 || ::poll(&w, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000))) < 0) {
          if (left_ms <= 0) return false;
        }
        continue;
      }
      if (n <= 0) return false;
      p += n;
      left -= static_cast<size_t>(n);
    }
    return true;
  }

  // Tells a lost agent to end, if it can still hear: it may be alive (silent, or its
  // words garbled) and running the steps that now run elsewhere. Never waits.
  void tell_end(Channel& c, const std::string& node) {
    std::unique_lock<std::mutex> lock(c.write_mu, std::try_to_lock);
    if (!lock.owns_lock() || c.in < 0) return;
    std::string line = json({{"t", "end"}, {"to", node}}).dump() + "\n";
    [[maybe_unused]] ssize_t n = ::send(c.in, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  // Marks `node` lost (mu held); its running jobs fail as lost. `tell`: its agent may
  // still hear, and is told to end.
  void lose(const std::string& node, const std::string& why, bool tell = true) {
    auto it = nodes.find(node);
    if (it == nodes.end() || it->second.lost) return;
    it->second.lost = true;
    it->second.ready = false;
    it->second.why = why;
    if (tell && !ending) tell_end(*channels[it->second.channel], node);
    for (auto& [id, p] : pending) {
      if (p.node == node && !p.result) {
        p.result = fail(Errc::kUnavailable, fmt::format("the agent on '{}' was lost: {}", node, why));
      }
    }
    changed.notify_all();
    if (o.say && !ending && started) o.say(fmt::format("the agent on '{}' was lost: {}", node, why));
  }

  void on_message(Channel& c, const agent::Unframer::Message& m) {
    auto parsed = agent::parse_message(m.text, "a message of the agent on '" + m.node + "'");
    std::unique_lock<std::mutex> lock(mu);
    auto it = nodes.find(m.node);
    if (it == nodes.end() || &*channels[it->second.channel] != &c) return;  // not one asked for
    Node& n = it->second;
    if (!parsed.ok()) {
      lose(m.node, parsed.error().message());
      return;
    }
    const json& j = *parsed;
    n.heard = now();
    auto field = [&j](const char* key) {
      auto f = j.find(key);
      return f != j.end() && f->is_string() ? f->get<std::string>() : std::string();
    };
    std::string t = field("t");
    if (t == "hello" && !n.lost && !n.ready) {
      // Its jobs' environment goes first: no job may reach it before.
      n.hello = j;
      lock.unlock();
      bool sent = send(c, {{"t", "env"}, {"to", m.node}, {"env", o.env.vars()}});
      lock.lock();
      Node& again = nodes.at(m.node);
      if (sent && !again.lost) again.ready = true;
      changed.notify_all();
      return;
    }
    auto id = j.find("id");
    if (id == j.end() || !id->is_number_integer()) return;
    auto p = pending.find(id->get<int64_t>());
    if (p == pending.end() || p->second.node != m.node || p->second.result) return;
    if (t == "out") {
      auto bytes = agent::from_base64(field("b64"));
      if (!bytes.ok() || !p->second.sinks->out) return;
      // Handed over outside the lock (a sink writes files): run() waits for it to
      // return before it lets the sinks go.
      Pending& pend = p->second;
      ++pend.in_sink;
      const OutputSinks* sinks = pend.sinks;
      lock.unlock();
      sinks->out(*bytes);
      lock.lock();
      --pend.in_sink;
      changed.notify_all();
    } else if (t == "exit") {
      if (auto e = j.find("error"); e != j.end()) {
        p->second.result = fail(Errc::kIo, e->is_string() ? e->get<std::string>() : "failed");
      } else if (auto oc = j.find("outcome"); oc != j.end()) {
        auto outcome = agent::outcome_from_json(*oc);
        p->second.result = outcome.ok() ? Result<JobOutcome>(std::move(*outcome))
                                        : Result<JobOutcome>(outcome.error());
      } else {
        p->second.result = fail(Errc::kIo, "its agent said it ended, and not how");
      }
      changed.notify_all();
    }
  }

  // Deadlines of the channel's nodes: a hello that did not come, an agent gone silent.
  void check_deadlines(Channel& c) {
    std::lock_guard<std::mutex> lock(mu);
    auto t = now();
    for (const std::string& name : c.spec.nodes) {
      Node& n = nodes.at(name);
      if (n.lost) continue;
      if (!n.ready && t - began > o.hello_within) {
        lose(name, fmt::format("it did not start within {} s{}", o.hello_within.count() / 1000,
                               tail_text(c)));
      } else if (n.ready && t - n.heard > o.silence) {
        lose(name, fmt::format("nothing heard from it for {} s", o.silence.count() / 1000));
      }
    }
  }

  size_t index_of(const Channel& c) const {
    for (size_t k = 0; k < channels.size(); ++k) {
      if (channels[k].get() == &c) return k;
    }
    return channels.size();
  }

  static std::string tail_text(const Channel& c) {
    if (c.err_tail.empty()) return "";
    return " (its launcher said: " + str::join(std::vector<std::string>(c.err_tail.begin(), c.err_tail.end()), "; ") + ")";
  }

  void read_channel(Channel& c) {
    agent::Unframer unframer;
    std::string out_buf, err_buf;
    bool out_open = true;
    while (out_open) {
      pollfd fds[3] = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}, {wake[0], POLLIN, 0}};
      int got = ::poll(fds, 3, 500);
      if (got < 0 && errno != EINTR) break;
      if (fds[2].revents & POLLIN) break;
      char chunk[65536];
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::read(c.out, chunk, sizeof chunk);
        if (n <= 0 && !(n < 0 && errno == EINTR)) {
          out_open = false;
        } else if (n > 0) {
          out_buf.append(chunk, static_cast<size_t>(n));
          size_t start = 0;
          for (size_t nl; (nl = out_buf.find('\n', start)) != std::string::npos; start = nl + 1) {
            auto fed = unframer.feed(std::string_view(out_buf).substr(start, nl - start));
            if (fed.message) on_message(c, *fed.message);
            if (!fed.foreign.empty() || !fed.problem.empty()) {
              std::lock_guard<std::mutex> lock(mu);
              keep_tail(c.err_tail, fed.problem.empty() ? fed.foreign : fed.problem);
            }
          }
          out_buf.erase(0, start);
          // An agent's line is never longer than kMaxLine: what runs on for 64 KiB with
          // no newline is not one, and is not kept.
          if (out_buf.size() > kMaxPartial) out_buf.clear();
        }
      }
      if (c.err >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t n = ::read(c.err, chunk, sizeof chunk);
        if (n <= 0) {
          close_fd(c.err);
        } else {
          err_buf.append(chunk, static_cast<size_t>(n));
          size_t start = 0;
          std::lock_guard<std::mutex> lock(mu);
          for (size_t nl; (nl = err_buf.find('\n', start)) != std::string::npos; start = nl + 1) {
            std::string line = str::printable(err_buf.substr(start, nl - start));
            std::string node = c.spec.ended ? c.spec.ended(line) : "";
            keep_tail(c.err_tail, line);
            if (!node.empty() && nodes.count(node) && nodes.at(node).channel == index_of(c)) {
              lose(node, "its launcher said: " + line);
            }
          }
          err_buf.erase(0, start);
          if (err_buf.size() > kMaxPartial) err_buf.clear();
        }
      }
      check_deadlines(c);
    }
    // Its launcher ended (or the run is ending): every node it served is gone.
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& name : c.spec.nodes) {
      lose(name, out_open ? "the run ended" : "its launcher ended" + tail_text(c));
    }
  }

  void start_channel(Channel& c) {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 ||
        ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      c.started_problem = std::string("cannot make its pipes: ") + std::strerror(errno);
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
        if (fd >= 0) ::close(fd);
      }
      return;
    }
    SpawnRequest req;
    req.argv = c.spec.argv;
    req.envp = envp_of(o.env);
    req.stdin_fd = in[1];
    req.stdout_fd = out[1];
    req.stderr_fd = err[1];
    FailureContext ctx;
    Spawner& spawner = o.spawner != nullptr ? *o.spawner : Spawner::real();
    auto spawned = c.child.start(spawner, req, ctx);
    ::close(in[1]);
    ::close(out[1]);
    ::close(err[1]);
    c.in = in[0];
    c.out = out[0];
    c.err = err[0];
    ::fcntl(c.in, F_SETFL, ::fcntl(c.in, F_GETFL) | O_NONBLOCK);
    if (!spawned.ok()) c.started_problem = spawned.error().message();
  }

  // Ends a channel's launcher: its stdin closed first (the agents' end), then, if it
  // is still there by `by`, SIGTERM and, a second later, SIGKILL.
  void end_channel(Channel& c, Steady::time_point by) {
    if (!c.child.started()) return;
    bool termed = false;
    while (!c.child.try_reap()) {
      auto t = now();
      if (t > by + std::chrono::seconds(1)) {
        c.child.signal(SIGKILL);
        c.child.reap();
        break;
      }
      if (t > by && !termed) {
        termed = true;
        c.child.signal(SIGTERM);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
};

Agents::Agents(std::unique_ptr<State> s) : s_(std::move(s)) {}

std::unique_ptr<Agents> Agents::start(AgentsOptions o) {
  auto s = std::make_unique<State>();
  s->o = std::move(o);
  s->began = s->now();
  if (::pipe2(s->wake, O_CLOEXEC) != 0) s->wake[0] = s->wake[1] = -1;
  for (size_t k = 0; k < s->o.channels.size(); ++k) {
    auto c = std::make_unique<State::Channel>();
    c->spec = s->o.channels[k];
    for (const auto& n : c->spec.nodes) s->nodes[n].channel = k;
    s->channels.push_back(std::move(c));
  }
  State* st = s.get();
  // The readers never take the run's signals: the run's own handling (a signalfd in
  // one thread) sees them, whichever thread the kernel would pick.
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  for (auto& c : s->channels) {
    st->start_channel(*c);
    if (!c->started_problem.empty()) {
      std::lock_guard<std::mutex> lock(st->mu);
      for (const auto& n : c->spec.nodes) {
        st->lose(n, fmt::format("{} could not start: {}", c->spec.argv.empty() ? "" : c->spec.argv[0],
                                c->started_problem));
      }
      continue;
    }
    State::Channel* ch = c.get();
    c->reader = std::thread([st, ch] { st->read_channel(*ch); });
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return std::unique_ptr<Agents>(new Agents(std::move(s)));
}

Agents::~Agents() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->ending = true;
  }
  // Every agent's stdin ends: each ends its jobs and exits, and so does its launcher.
  // Not under write_mu: a writer may be waiting for the launcher to read.
  for (auto& c : s_->channels) {
    if (c->in >= 0) ::shutdown(c->in, SHUT_WR);
  }
  auto by = s_->now() + std::chrono::seconds(3);
  for (auto& c : s_->channels) s_->end_channel(*c, by);
  char x = 1;
  if (s_->wake[1] >= 0) [[maybe_unused]] ssize_t w = ::write(s_->wake[1], &x, 1);
  for (auto& c : s_->channels) {
    if (c->reader.joinable()) c->reader.join();
    std::lock_guard<std::mutex> lock(c->write_mu);
    close_fd(c->in);
    close_fd(c->out);
    close_fd(c->err);
  }
  close_fd(s_->wake[0]);
  close_fd(s_->wake[1]);
}

void Agents::wait_started() {
  std::unique_lock<std::mutex> lock(s_->mu);
  s_->changed.wait(lock, [this] {
    for (const auto& [name, n] : s_->nodes) {
      if (!n.ready && !n.lost) return false;
    }
    return true;
  });
  s_->started = true;
}

std::map<std::string, json> Agents::ready() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  std::map<std::string, json> out;
  for (const auto& [name, n] : s_->nodes) {
    if (n.ready) out[name] = n.hello;
  }
  return out;
}

std::map<std::string, std::string> Agents::lost() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  std::map<std::string, std::string> out;
  for (const auto& [name, n] : s_->nodes) {
    if (n.lost) out[name] = n.why;
  }
  return out;
}

bool Agents::serves(std::string_view node) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  auto it = s_->nodes.find(node);
  return it != s_->nodes.end() && it->second.ready;
}

bool Agents::knows(std::string_view node) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->nodes.find(node) != s_->nodes.end();
}

Result<JobOutcome> Agents::run(const std::string& node, const JobSpec& job,
                               const OutputSinks& sinks) {
  int64_t id = 0;
  State::Channel* channel = nullptr;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    auto it = s_->nodes.find(node);
    if (it == s_->nodes.end() || !it->second.ready) {
      return fail(Errc::kUnavailable,
                  fmt::format("no agent runs on '{}'{}", node,
                              it != s_->nodes.end() && it->second.lost ? ": " + it->second.why : ""));
    }
    id = s_->next_id++;
    s_->pending[id] = {node, &sinks, std::nullopt};
    channel = s_->channels[it->second.channel].get();
  }
  json request = {{"t", "run"}, {"to", node}, {"id", id}, {"job", agent::job_to_json(job)}};
  s_->send(*channel, request);  // not sent: the node is lost, and so is the job
  bool cancel_sent = false;
  std::unique_lock<std::mutex> lock(s_->mu);
  for (;;) {
    State::Pending& p = s_->pending.at(id);
    if (p.result && p.in_sink == 0) break;
    s_->changed.wait_for(lock, std::chrono::milliseconds(100));
    if (cancel_sent || job.cancel_fd < 0) continue;
    pollfd c{job.cancel_fd, POLLIN, 0};
    if (::poll(&c, 1, 0) > 0 && (c.revents & POLLIN)) {
      cancel_sent = true;
      lock.unlock();
      s_->send(*channel, {{"t", "cancel"}, {"to", node}, {"id", id}});
      lock.lock();
    }
  }
  Result<JobOutcome> result = std::move(*s_->pending.at(id).result);
  s_->pending.erase(id);
  return result;
}

}  // namespace berth::launch
