#include "util/clock.h"

#include <ctime>
#include <random>

#include <fmt/format.h>

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

std::string utc_text(std::chrono::system_clock::time_point t, bool millis) {
  using namespace std::chrono;
  auto secs = time_point_cast<seconds>(t);
  if (secs > t) secs -= seconds(1);  // floor, for times before the epoch too
  std::time_t tt = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf, n);
  if (millis) out += fmt::format(".{:03}", duration_cast<milliseconds>(t - secs).count());
  out += 'Z';
  return out;
}

std::chrono::milliseconds jittered(std::chrono::milliseconds delay) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> pick(delay.count() / 2, delay.count());
  return std::chrono::milliseconds(pick(rng));
}

}  // namespace berth
