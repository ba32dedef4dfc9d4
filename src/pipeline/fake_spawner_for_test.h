// FakeSpawner: a launch::Spawner (launch/spawn.h) for tests of what runs steps, which
// sees every request and may refuse it (test-only; header-only, so the library never
// links it).
//
// A refused request starts nothing: run_job reports the refusal as that rank's failure,
// as it would a program that cannot be executed. An accepted one is handed to the real
// spawner, since the job that asked goes on to wait for a real child — its pid, its
// pidfd, the ends of its output pipes — and nothing short of a process answers those;
// a test's step command is a trivial one (sh -c, /bin/true). `before` runs in the
// step's thread before each start: the place for a test to change the world while the
// step runs (an input edited, a store emptied).
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launch/spawn.h"

namespace berth::pipeline {

class FakeSpawner : public launch::Spawner {
 public:
  // What a request asked for, kept after the request itself is gone.
  struct Seen {
    std::vector<std::string> argv;
    std::vector<std::string> envp;
    std::string cwd;
    std::vector<int> cpus;
    std::vector<std::string> read_only;  // the paths it was to see read-only
  };

  // Every later request fails with `e`, and starts nothing.
  void refuse(Error e) {
    std::lock_guard<std::mutex> lock(mu_);
    refusal_ = std::move(e);
  }
  // Runs before each start (or refusal), with the request.
  std::function<void(const launch::SpawnRequest&)> before;

  // The requests so far, in order.
  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  Result<launch::Spawned> spawn(const launch::SpawnRequest& req, const launch::FailureContext& ctx,
                                const std::function<void(pid_t)>& on_pid) override {
    std::optional<Error> refusal;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Seen s{req.argv, req.envp, req.cwd, req.cpus, {}};
      if (req.read_only != nullptr) s.read_only = req.read_only->paths;
      seen_.push_back(std::move(s));
      refusal = refusal_;
    }
    if (before) before(req);
    if (refusal) return *refusal;
    return launch::Spawner::real().spawn(req, ctx, on_pid);
  }

 private:
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
  std::optional<Error> refusal_;
};

}  // namespace berth::pipeline
