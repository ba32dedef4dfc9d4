// InFlight: steps in flight and steps running are counted apart (in_flight.h).
#include "pipeline/in_flight.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

TEST(InFlight, AStepWhoseProcessesEndedIsInFlightButNotRunning) {
  InFlight f;
  f.resize(3);
  f.start(0);
  f.start(1);
  EXPECT_EQ(f.in_flight(), 2u);
  EXPECT_EQ(f.running(), 2u);
  f.exited(0);  // its cores go to the next step; it still publishes
  f.start(2);
  EXPECT_EQ(f.in_flight(), 3u);
  EXPECT_EQ(f.running(), 2u);
  EXPECT_EQ(f.most(), 3u);
  f.done(0);
  EXPECT_EQ(f.in_flight(), 2u);
  EXPECT_EQ(f.running(), 2u);
  EXPECT_FALSE(f.started(0));
  EXPECT_TRUE(f.started(2));
}

TEST(InFlight, DoneWithoutExitedEndsItsProcessesTooAndRepeatsAreHarmless) {
  InFlight f;
  f.resize(2);
  f.start(0);
  f.start(0);  // already started: not counted twice
  EXPECT_EQ(f.in_flight(), 1u);
  f.done(0);
  EXPECT_EQ(f.in_flight(), 0u);
  EXPECT_EQ(f.running(), 0u);
  f.exited(0);  // after done, or never started: nothing to count
  f.done(1);
  EXPECT_EQ(f.running(), 0u);
  EXPECT_EQ(f.in_flight(), 0u);
  // A retried step starts again from the beginning.
  f.start(0);
  f.exited(0);
  f.exited(0);
  EXPECT_EQ(f.running(), 0u);
  f.done(0);
  f.start(0);
  EXPECT_EQ(f.running(), 1u);
}

}  // namespace
}  // namespace berth::pipeline
