// A worker's claims on the keys of the steps it runs (spec 06 §4): each taken only with
// a placement in hand (a worker claims what it is about to run, never its whole queue),
// extended half a lease after the last, handed back when its step fails or is
// interrupted so that another worker may do it. A claim only saves work: a store that
// cannot take one costs a duplicate, never the run.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/lease.h"
#include "pipeline/report.h"
#include "util/clock.h"

namespace berth::pipeline {

class RunClaims {
 public:
  // `leases` null: an ordinary run, which claims nothing. Counts go to `stats`.
  RunClaims(Leases* leases, const Clock& clock, LeaseStats& stats, size_t steps)
      : leases_(leases), clock_(clock), stats_(stats), held_(steps) {}

  bool active() const { return leases_ != nullptr; }

  struct Claim {
    bool run = true;      // false: another worker holds the key, and runs the step
    std::string holder;   // that worker
    std::string problem;  // the store took no lease: the step runs without one
  };
  // Claims step i's `key`.
  Claim claim(size_t i, const std::string& key);
  // Hands step i's claim back, if it holds one (a failed or interrupted step).
  void release(size_t i, const std::string& key);
  // Step i holds no claim any more (it ended, or its claim was lost).
  void drop(size_t i);
  // Extends every claim whose renewal is due; `key_of` names a step's key.
  template <typename KeyOf>
  void renew(const KeyOf& key_of) {
    if (!leases_) return;
    auto now = clock_.steady();
    std::vector<size_t> due;
    for (const auto& [i, at] : renewals_) {
      if (at <= now) due.push_back(i);
    }
    for (size_t i : due) renew_one(i, key_of(i), now);
  }
  // When the next renewal is due (max: none is).
  std::chrono::steady_clock::time_point next_renewal() const;

 private:
  void renew_one(size_t i, const std::string& key, std::chrono::steady_clock::time_point now);
  void held(size_t i, unsigned generation);

  Leases* leases_;
  const Clock& clock_;
  LeaseStats& stats_;
  std::vector<std::optional<unsigned>> held_;  // the lease generation held, per step
  std::map<size_t, std::chrono::steady_clock::time_point> renewals_;  // when each is next extended
};

}  // namespace berth::pipeline
