// Wireup (wireup.h): one job on the process's PMIx and PMI servers.
#include "wireup/wireup.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "wireup/pmi_server.h"

namespace berth::wireup {
namespace {

class Job final : public JobWire {
 public:
  ~Job() override {
    // Off the servers first: after this neither calls the sink.
    if (pmix_ != nullptr) pmix_->remove_job(id_);
    if (pmi_ != nullptr) pmi_->remove_job(id_);
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  const EnvList& env(int rank) const override { return env_.at(static_cast<size_t>(rank)); }
  int child_fd(int rank) const override {
    return fds_.empty() ? -1 : fds_.at(static_cast<size_t>(rank));
  }
  void close_child_fd(int rank) override {
    if (fds_.empty()) return;
    int& fd = fds_.at(static_cast<size_t>(rank));
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  const std::vector<std::string>& notices() const override { return notices_; }
  void sync() override {
    // PMIx's finalize is answered only after berth has seen it; PMI's is not waited
    // for by every client, so what PMI ranks sent is served to its end first.
    if (pmi_ != nullptr) pmi_->sync();
  }

  std::string id_;
  PmixServer* pmix_ = nullptr;
  PmiServer* pmi_ = nullptr;
  std::vector<EnvList> env_;
  std::vector<int> fds_;
  std::vector<std::string> notices_;
};

class ProcessWireup final : public Wireup {
 public:
  explicit ProcessWireup(std::string tmp_root) : tmp_root_(std::move(tmp_root)) {}

  Result<std::unique_ptr<JobWire>> serve(const JobMap& map, Mode mode, EventSink sink) override;
  std::string next_id() override {
    return fmt::format("berth.{}.{}", ::getpid(), next_.fetch_add(1) + 1);
  }

 private:
  // The PMI server, started on first use; a failure to start is kept.
  Result<PmiServer*> pmi() {
    std::lock_guard<std::mutex> lock(mu_);
    if (pmi_) return pmi_.get();
    if (pmi_failed_) return *pmi_failed_;
    auto s = PmiServer::start();
    if (!s.ok()) {
      pmi_failed_ = s.error();
      return *pmi_failed_;
    }
    pmi_ = std::move(*s);
    return pmi_.get();
  }

  std::string tmp_root_;
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::unique_ptr<PmiServer> pmi_;
  std::optional<Error> pmi_failed_;
};

Result<std::unique_ptr<JobWire>> ProcessWireup::serve(const JobMap& map, Mode mode,
                                                      EventSink sink) {
  auto job = std::make_unique<Job>();
  job->id_ = map.id;
  job->env_.resize(static_cast<size_t>(map.size()));
  if (mode == Mode::kNone) return std::unique_ptr<JobWire>(std::move(job));
  // Under auto a job of one rank is not wired: as a singleton an MPI rank is already
  // "rank 0 of 1", the answer the servers would give, and a namespace costs libpmix
  // about 0.1 ms of CPU a job, a third of starting /bin/true (bench/launch) — which
  // the many one-task steps of a pipeline would pay for nothing (spec 07 §1).
  if (mode == Mode::kAuto && map.size() == 1) return std::unique_ptr<JobWire>(std::move(job));

  if (mode == Mode::kAuto || mode == Mode::kPmix) {
    auto server = PmixServer::instance(tmp_root_);
    Result<PmixJob> served = server.ok() ? (*server)->add_job(map, sink) : server.error();
    if (served.ok()) {
      job->pmix_ = *server;
      for (size_t r = 0; r < served->env.size(); ++r) job->env_[r] = std::move(served->env[r]);
    } else if (mode == Mode::kPmix) {
      return served.error();
    } else {
      job->notices_.push_back(
          fmt::format("PMIx wire-up is unavailable ({}): MPI programs "
                      "built on PMIx (Open MPI) will start as singletons",
                      served.error().message()));
    }
  }
  if (mode != Mode::kPmix) {
    auto server = pmi();
    Result<PmiJob> served = server.ok() ? (*server)->add_job(map, sink) : server.error();
    if (served.ok()) {
      job->pmi_ = *server;
      job->fds_ = served->child_fds;
      for (int r = 0; r < map.size(); ++r) {
        for (auto& kv : served->env(r, kPmiFdInChild)) {
          job->env_[static_cast<size_t>(r)].push_back(std::move(kv));
        }
      }
    } else if (mode != Mode::kAuto) {
      return served.error();
    } else {
      job->notices_.push_back(
          fmt::format("PMI wire-up is unavailable ({}): MPI programs "
                      "built on PMI (MPICH) will start as singletons",
                      served.error().message()));
    }
  }
  return std::unique_ptr<JobWire>(std::move(job));
}

}  // namespace

Wireup& Wireup::process(const std::string& tmp_root) {
  static ProcessWireup w(tmp_root);
  return w;
}

}  // namespace berth::wireup
