// Clock: the time, behind an interface, so that code that waits or stamps can be
// tested with a clock the test moves by hand.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace berth {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for records that leave the process (reports, leases).
  virtual std::chrono::system_clock::time_point wall() const = 0;
  // Monotonic time, for measuring durations and deadlines inside the process.
  virtual std::chrono::steady_clock::time_point steady() const = 0;

  // The process's real clock.
  static Clock& real();
};

// A wall-clock time as ISO-8601 UTC, "2026-12-03T08:28:07Z", or with `millis`
// "2026-12-03T08:28:07.123Z": the one way berth writes a time into a report, a row, a
// lease or a tagged line.
std::string utc_text(std::chrono::system_clock::time_point t, bool millis = false);

// A backoff pause of about `delay`: uniform in [delay/2, delay], so that many threads or
// processes backing off together do not retry in step. Drawn from a generator of the
// calling thread's own, seeded on its first draw: a thread that never backs off (a step's
// thread, 10^4 of them in a run) never pays for seeding it, which asks the CPU for
// entropy — a trap to the hypervisor in a VM — several times.
std::chrono::milliseconds jittered(std::chrono::milliseconds delay);

}  // namespace berth
