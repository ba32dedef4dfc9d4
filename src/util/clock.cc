#include "util/clock.h"

namespace berth {
namespace {

class RealClock : public Clock {
 public:
  std::chrono::system_clock::time_point wall() const override {
    return std::chrono::system_clock::now();
  }
  std::chrono::steady_clock::time_point steady() const override {
    return std::chrono::steady_clock::now();
  }
};

}  // namespace

Clock& Clock::real() {
  static RealClock clock;
  return clock;
}

}  // namespace berth
