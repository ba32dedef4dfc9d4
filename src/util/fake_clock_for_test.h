// FakeClock: a Clock (util/clock.h) that moves only when told to, for tests of what
// waits, retries and times out (test-only; header-only, so the library never links it).
#pragma once

#include <chrono>

#include "util/clock.h"

namespace berth {

// A clock that moves only when told to.
class FakeClock : public Clock {
 public:
  std::chrono::system_clock::time_point wall() const override { return wall_; }
  std::chrono::steady_clock::time_point steady() const override { return steady_; }
  void advance(std::chrono::nanoseconds d) {
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    steady_ += d;
  }

 private:
  std::chrono::system_clock::time_point wall_{std::chrono::seconds(1'700'000'000)};
  std::chrono::steady_clock::time_point steady_{};
};

}  // namespace berth
