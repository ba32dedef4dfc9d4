// PmiServer (pmi_server.h, spec 07 §3): one thread, one epoll set, every rank's socket.
//
// The thread owns all socket I/O. add_job and remove_job, on any thread, change the
// tables under `mu_`; the thread serves under `mu_` too and calls sinks with it
// released, recording which job it is delivering to so that remove_job can wait until
// that call has returned. Each round (one epoll_wait's ready sockets) reads and decodes,
// delivers the events, and only then writes the answers.
#include "wireup/pmi_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "util/signals.h"
#include "wireup/pmi_job_state.h"
#include "wireup/pmi_wire.h"

namespace berth::wireup {
namespace {

// A peer that never reads its answers is cut off rather than buffered without end.
constexpr size_t kMaxPending = 16 * 1024 * 1024;
constexpr size_t kReadChunk = 64 * 1024;
constexpr uint64_t kWakeToken = 0;

std::string errno_text(int err) { return std::strerror(err); }

struct Job {
  explicit Job(const JobMap& map, EventSink s) : state(map), sink(std::move(s)) {}
  pmi::JobState state;
  EventSink sink;
  std::vector<uint64_t> conn_of_rank;  // 0 = closed
  bool removed = false;                // under the server's mutex
};

struct Conn {
  int fd = -1;
  std::shared_ptr<Job> job;
  int rank = 0;
  std::string in;
  std::string out;
  bool watching_out = false;
};

// What one round of ready sockets produced: events to deliver once the mutex is
// released, then answers to write. Answers wait for the events, so that a sink hears
// of a rank's init or finalize before the rank can go on past it (and exit).
struct Round {
  struct Delivery {
    std::shared_ptr<Job> job;
    RankEvent event;
  };
  struct Answer {
    uint64_t token;
    std::string bytes;
  };
  std::vector<Delivery> deliveries;
  std::vector<Answer> answers;
};

class Server final : public PmiServer {
 public:
  Server(int epfd, int wakefd) : epfd_(epfd), wakefd_(wakefd) {}
  ~Server() override;

  Result<void> run_thread();
  Result<PmiJob> add_job(const JobMap& map, EventSink sink) override;
  void remove_job(const std::string& id) override;
  void sync() override;

 private:
  void loop();
  void drain_all(Round& round);
  void serve(uint64_t token, uint32_t events, Round& round);
  void apply(const std::shared_ptr<Job>& job, uint64_t sender, pmi::Effects& fx, Round& round);
  void send(uint64_t token, std::string bytes);
  void flush(Conn& c, uint64_t token);
  void close_conn(uint64_t token);
  void deliver(Round& round);

  const int epfd_;
  const int wakefd_;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable delivered_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::unordered_map<uint64_t, Conn> conns_;
  uint64_t next_token_ = 1;
  const Job* delivering_ = nullptr;  // the job whose sink the thread is calling
  // sync(): requests counted up by callers, served by the thread (under mu_).
  uint64_t sync_asked_ = 0;
  uint64_t sync_done_ = 0;
  std::condition_variable synced_;
};

Result<void> validate(const JobMap& map) {
  std::string problem = pmi::kvsname_problem(map.id);
  if (!problem.empty()) return fail(Errc::kInvalidInput, problem);
  if (map.procs.empty()) return fail(Errc::kInvalidInput, "job " + map.id + " has no ranks");
  for (size_t r = 0; r < map.procs.size(); ++r) {
    const JobMap::Proc& p = map.procs[r];
    if (p.node < 0 || static_cast<size_t>(p.node) >= map.nodes.size()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("job {}: rank {} is on node {}, not one of its {} nodes", map.id, r,
                              p.node, map.nodes.size()));
    }
    if (p.app < 0) {
      return fail(Errc::kInvalidInput, fmt::format("job {}: rank {} has app {}", map.id, r, p.app));
    }
  }
  return Ok{};
}

Server::~Server() {
  stop_ = true;
  uint64_t one = 1;
  (void)!::write(wakefd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  for (auto& [token, c] : conns_) ::close(c.fd);
  ::close(epfd_);
  ::close(wakefd_);
}

Result<void> Server::run_thread() {
  try {
    SignalsBlocked blocked;  // the thread takes none of berth's signals
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error& e) {
    return fail(Errc::kIo, fmt::format("cannot start the PMI server's thread: {}", e.what()));
  }
  return Ok{};
}

Result<PmiJob> Server::add_job(const JobMap& map, EventSink sink) {
  BERTH_CHECK(validate(map));
  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.count(map.id) != 0) {
    return fail(Errc::kInvalidInput, fmt::format("job id {} is already served", map.id));
  }
  auto job = std::make_shared<Job>(map, std::move(sink));
  PmiJob out;
  out.size = map.size();
  auto undo = [&](std::string why) {
    for (uint64_t t : job->conn_of_rank) close_conn(t);
    for (int fd : out.child_fds) ::close(fd);
    return fail(Errc::kIo, std::move(why));
  };
  for (int r = 0; r < map.size(); ++r) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      int err = errno;
      return undo(fmt::format("job {}: socketpair for rank {}: {}{}", map.id, r, errno_text(err),
                              err == EMFILE ? " (EMFILE)" : ""));
    }
    // Our end never blocks the thread; the rank's end stays blocking, as MPICH expects.
    int flags = ::fcntl(sv[0], F_GETFL);
    uint64_t token = next_token_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = token;
    if (flags < 0 || ::fcntl(sv[0], F_SETFL, flags | O_NONBLOCK) != 0 ||
        ::epoll_ctl(epfd_, EPOLL_CTL_ADD, sv[0], &ev) != 0) {
      int err = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      return undo(fmt::format("job {}: rank {}'s PMI socket: {}", map.id, r, errno_text(err)));
    }
    conns_.emplace(token, Conn{sv[0], job, r, {}, {}, false});
    job->conn_of_rank.push_back(token);
    out.child_fds.push_back(sv[1]);
  }
  jobs_.emplace(map.id, std::move(job));
  return out;
}

void Server::remove_job(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  std::shared_ptr<Job> job = std::move(it->second);
  jobs_.erase(it);
  job->removed = true;
  for (uint64_t t : job->conn_of_rank) close_conn(t);
  // The thread may be inside this job's sink right now; from any other thread, wait for
  // that call to return. From the sink itself (the server's thread) there is nothing to
  // wait for: the thread checks `removed` before every later call.
  if (std::this_thread::get_id() != thread_.get_id()) {
    delivered_.wait(lock, [&] { return delivering_ != job.get(); });
  }
}

void Server::loop() {
  epoll_event evs[64];
  while (!stop_) {
    int n = ::epoll_wait(epfd_, evs, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the epoll set is gone: nothing left to serve
    }
    Round round;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; ++i) {
        if (evs[i].data.u64 == kWakeToken) {
          uint64_t count = 0;
          (void)!::read(wakefd_, &count, sizeof count);
          continue;
        }
        serve(evs[i].data.u64, evs[i].events, round);
      }
    }
    deliver(round);
    std::unique_lock<std::mutex> lock(mu_);
    for (Round::Answer& a : round.answers) send(a.token, std::move(a.bytes));
    if (sync_done_ < sync_asked_) {
      // Everything already sent to us, to its end, before the callers go on.
      uint64_t asked = sync_asked_;
      Round rest;
      drain_all(rest);
      lock.unlock();
      deliver(rest);
      lock.lock();
      for (Round::Answer& a : rest.answers) send(a.token, std::move(a.bytes));
      sync_done_ = asked;
      synced_.notify_all();
    }
  }
}

// Serves every connection until its buffered bytes are used up (or it reached its
// end and was closed). Under mu_.
void Server::drain_all(Round& round) {
  std::vector<uint64_t> tokens;
  for (const auto& [token, c] : conns_) tokens.push_back(token);
  for (uint64_t token : tokens) {
    // Bounded: a rank still writing cannot keep the caller waiting for ever.
    for (int pass = 0; pass < 1024; ++pass) {
      auto it = conns_.find(token);
      if (it == conns_.end()) break;
      char peek;
      ssize_t n = ::recv(it->second.fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      serve(token, EPOLLIN | (n == 0 ? EPOLLRDHUP : 0u), round);
    }
  }
}

void Server::sync() {
  std::unique_lock<std::mutex> lock(mu_);
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from inside a sink
  uint64_t want = ++sync_asked_;
  uint64_t one = 1;
  (void)!::write(wakefd_, &one, sizeof one);
  synced_.wait_for(lock, std::chrono::seconds(1),
                   [&] { return sync_done_ >= want || stop_.load(); });
}

// One ready socket: write what waits, read what came, answer every whole message.
void Server::serve(uint64_t token, uint32_t events, Round& round) {
  auto it = conns_.find(token);
  if (it == conns_.end()) return;  // closed earlier in this round
  if ((events & EPOLLOUT) != 0) flush(it->second, token);
  it = conns_.find(token);
  if (it == conns_.end() || (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) return;

  Conn& c = it->second;
  char buf[kReadChunk];
  ssize_t got = ::recv(c.fd, buf, sizeof buf, 0);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  bool eof = got <= 0;
  if (got > 0) c.in.append(buf, static_cast<size_t>(got));

  std::shared_ptr<Job> job = c.job;  // c may be closed by what a message does
  size_t used = 0;
  while (true) {
    auto frame = pmi::next_frame(std::string_view(c.in).substr(used));
    pmi::Effects fx;
    if (!frame.ok()) {
      job->state.on_garbage(c.rank, frame.error(), fx);
    } else if (!frame->has_value()) {
      break;
    } else {
      const pmi::Frame& f = **frame;
      auto m = pmi::decode(f.wire, std::string_view(c.in).substr(used, f.size));
      used += f.size;
      if (m.ok()) {
        job->state.on_message(c.rank, f.wire, *m, fx);
      } else {
        job->state.on_garbage(c.rank, m.error(), fx);
      }
    }
    apply(job, token, fx, round);
    if (conns_.count(token) == 0) return;  // the message ended the connection
  }
  c.in.erase(0, used);
  // The rank closed its end (after finalize, or it died): nothing more will come.
  if (eof) close_conn(token);
}

void Server::apply(const std::shared_ptr<Job>& job, uint64_t sender, pmi::Effects& fx,
                   Round& round) {
  for (auto& s : fx.sends) {
    uint64_t to = job->conn_of_rank[static_cast<size_t>(s.rank)];
    if (to != 0) round.answers.push_back({to, std::move(s.bytes)});
  }
  for (RankEvent& e : fx.events) round.deliveries.push_back({job, std::move(e)});
  if (fx.close_sender) close_conn(sender);
}

void Server::send(uint64_t token, std::string bytes) {
  auto it = conns_.find(token);
  if (it == conns_.end()) return;
  it->second.out += bytes;
  flush(it->second, token);
}

// Writes what the connection has pending; watches for room when some is left.
void Server::flush(Conn& c, uint64_t token) {
  while (!c.out.empty()) {
    // MSG_NOSIGNAL: a rank that has gone must not raise SIGPIPE in berth.
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) return close_conn(token);
    c.out.erase(0, static_cast<size_t>(n));
  }
  if (c.out.size() > kMaxPending) return close_conn(token);
  bool want = !c.out.empty();
  if (want != c.watching_out) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u);
    ev.data.u64 = token;
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.watching_out = want;
  }
}

void Server::close_conn(uint64_t token) {
  auto it = conns_.find(token);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  uint64_t& slot = c.job->conn_of_rank[static_cast<size_t>(c.rank)];
  if (slot == token) slot = 0;
  conns_.erase(it);
}

// Calls the sinks with the mutex released, so that a sink may add or remove jobs.
void Server::deliver(Round& round) {
  for (Round::Delivery& d : round.deliveries) {
    std::unique_lock<std::mutex> lock(mu_);
    if (d.job->removed) continue;
    delivering_ = d.job.get();
    lock.unlock();
    d.job->sink(d.event);
    lock.lock();
    delivering_ = nullptr;
    delivered_.notify_all();
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> PmiJob::env(int rank, int fd_in_child) const {
  return {
      {"PMI_FD", std::to_string(fd_in_child)},
      {"PMI_RANK", std::to_string(rank)},
      {"PMI_SIZE", std::to_string(size)},
      // Set, not left out: a PMI_SPAWNED inherited from an outer launcher would make
      // MPICH look for a parent job.
      {"PMI_SPAWNED", "0"},
  };
}

Result<std::unique_ptr<PmiServer>> PmiServer::start() {
  int epfd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return fail(Errc::kIo, "PMI server: epoll_create1: " + errno_text(errno));
  int wakefd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakefd < 0) {
    int err = errno;
    ::close(epfd);
    return fail(Errc::kIo, "PMI server: eventfd: " + errno_text(err));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeToken;
  if (::epoll_ctl(epfd, EPOLL_CTL_ADD, wakefd, &ev) != 0) {
    int err = errno;
    ::close(epfd);
    ::close(wakefd);
    return fail(Errc::kIo, "PMI server: epoll_ctl: " + errno_text(err));
  }
  auto server = std::make_unique<Server>(epfd, wakefd);  // owns both from here
  BERTH_CHECK(server->run_thread());
  return std::unique_ptr<PmiServer>(std::move(server));
}

}  // namespace berth::wireup
