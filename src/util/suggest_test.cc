#include "util/suggest.h"

#include <gtest/gtest.h>

namespace berth::str {
namespace {

TEST(Suggest, EditDistanceCountsSwapsOnce) {
  struct Case {
    const char *a, *b;
    size_t want;
  } cases[] = {{"", "", 0},          {"run", "run", 0}, {"rn", "run", 1},        {"rnu", "run", 1},
               {"cores", "gpus", 4}, {"", "abc", 3},    {"kitten", "sitting", 3}};
  for (const Case& c : cases) {
    EXPECT_EQ(edit_distance(c.a, c.b), c.want) << c.a << " / " << c.b;
    EXPECT_EQ(edit_distance(c.b, c.a), c.want) << c.b << " / " << c.a;
  }
}

TEST(Suggest, ClosestIsALikelyTypoOrNothing) {
  std::vector<std::string_view> keys = {"name", "run", "cmd", "inputs", "outputs", "timeout"};
  EXPECT_EQ(closest("rn", keys), "run");
  EXPECT_EQ(closest("ouputs", keys), "outputs");
  EXPECT_EQ(closest("timout", keys), "timeout");
  EXPECT_EQ(closest("zzzzzz", keys), std::nullopt);  // nothing near
  EXPECT_EQ(closest("run", keys), std::nullopt);     // itself: no suggestion
  EXPECT_EQ(closest("x", {}), std::nullopt);
  EXPECT_EQ(did_you_mean("inptus", keys), " (did you mean 'inputs'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", keys), "");
}

}  // namespace
}  // namespace berth::str
