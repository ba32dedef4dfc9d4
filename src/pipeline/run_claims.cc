// A worker's claims on its steps' keys (run_claims.h).
#include "pipeline/run_claims.h"

#include <fmt/format.h>

namespace berth::pipeline {

RunClaims::Claim RunClaims::claim(size_t i, const std::string& key) {
  Claim out;
  auto c = leases_->acquire(key);
  if (!c.ok()) {
    out.problem = fmt::format("lease: {}; running it without one", c.error().message());
    return out;
  }
  switch (c->outcome) {
    case Leases::Outcome::kHeld:
      ++stats_.held;
      out.run = false;
      out.holder = c->holder;
      return out;
    case Leases::Outcome::kAcquired:
      ++stats_.acquired;
      held(i, c->generation);
      return out;
    case Leases::Outcome::kLockFree:
      ++stats_.lock_free;
      return out;
  }
  return out;
}

void RunClaims::release(size_t i, const std::string& key) {
  if (leases_ && held_[i] && leases_->release(key, *held_[i]).ok()) ++stats_.released;
}

void RunClaims::drop(size_t i) {
  held_[i].reset();
  renewals_.erase(i);
}

void RunClaims::held(size_t i, unsigned generation) {
  held_[i] = generation;
  renewals_[i] = clock_.steady() + leases_->duration() / 2;
}

void RunClaims::renew_one(size_t i, const std::string& key,
                          std::chrono::steady_clock::time_point now) {
  auto c = leases_->extend(key);
  if (!c.ok()) {
    // The store is down for now: try again in a quarter lease, well inside the half
    // left before the deadline.
    renewals_[i] = now + leases_->duration() / 4;
    return;
  }
  if (c->outcome == Leases::Outcome::kAcquired) {
    ++stats_.extended;
    held(i, c->generation);
    return;
  }
  // Ours expired and another worker took the key (held), or no generation is left
  // (lock-free): the step runs on without a claim; a duplicate costs only the work.
  if (c->outcome == Leases::Outcome::kHeld) ++stats_.lost;
  drop(i);
}

std::chrono::steady_clock::time_point RunClaims::next_renewal() const {
  auto at = std::chrono::steady_clock::time_point::max();
  for (const auto& [i, when] : renewals_) at = std::min(at, when);
  return at;
}

}  // namespace berth::pipeline
