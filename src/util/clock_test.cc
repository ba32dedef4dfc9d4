#include "util/clock.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

namespace berth {
namespace {

TEST(Jittered, StaysWithinHalfToWholeDelayAndVaries) {
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    auto d = jittered(std::chrono::milliseconds(200));
    ASSERT_GE(d.count(), 100);
    ASSERT_LE(d.count(), 200);
    seen.insert(d.count());
  }
  EXPECT_GT(seen.size(), 50u);  // a fixed pause would retry in step with every other thread
  EXPECT_LE(jittered(std::chrono::milliseconds(1)).count(), 1);
  EXPECT_EQ(jittered(std::chrono::milliseconds(0)).count(), 0);
}

TEST(Jittered, ThreadsDrawTheirOwnPauses) {
  // Two threads seeded alike would back off in lockstep against the same server.
  std::vector<int64_t> a, b;
  std::thread ta([&] {
    for (int i = 0; i < 32; ++i) a.push_back(jittered(std::chrono::seconds(60)).count());
  });
  std::thread tb([&] {
    for (int i = 0; i < 32; ++i) b.push_back(jittered(std::chrono::seconds(60)).count());
  });
  ta.join();
  tb.join();
  EXPECT_NE(a, b);
}

TEST(UtcText, WritesIsoUtcWithAndWithoutMillis) {
  std::chrono::system_clock::time_point t{std::chrono::milliseconds(1'796'286'487'123)};
  EXPECT_EQ(utc_text(t), "2026-12-03T08:28:07Z");
  EXPECT_EQ(utc_text(t, true), "2026-12-03T08:28:07.123Z");
}

}  // namespace
}  // namespace berth
