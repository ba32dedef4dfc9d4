#include "topo/cpulist.h"

#include <gtest/gtest.h>

#include "topo/fake_tree_for_test.h"

namespace berth::topo {
namespace {

using testing::range;

struct Good {
  const char* text;
  std::vector<int> ids;
  const char* canonical;
};

TEST(Cpulist, ParsesWhatSysfsWrites) {
  std::vector<int> aurora = range(1, 51);
  for (int i : range(53, 103)) aurora.push_back(i);
  const Good cases[] = {
      {"", {}, ""},
      {"\n", {}, ""},
      {"0", {0}, "0"},
      {"0\n", {0}, "0"},
      {"0-3", {0, 1, 2, 3}, "0-3"},
      {"0,128\n", {0, 128}, "0,128"},
      {"0-1,4", {0, 1, 4}, "0-1,4"},
      {"1-51,53-103", aurora, "1-51,53-103"},
      {"  7 ", {7}, "7"},
      // Any order, repeats and overlaps: a set is a set.
      {"8,0-3", {0, 1, 2, 3, 8}, "0-3,8"},
      {"0-3,2-5,5", {0, 1, 2, 3, 4, 5}, "0-5"},
      {"3,3", {3}, "3"},
  };
  for (const Good& c : cases) {
    auto r = parse_cpulist(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(*r, c.ids) << c.text;
    EXPECT_EQ(encode_cpulist(*r), c.canonical) << c.text;
  }
}

TEST(Cpulist, RefusesWhatSysfsNeverWrites) {
  const std::pair<const char*, const char*> cases[] = {
      {",", "position 1: empty element"},
      {"1,,2", "position 3: empty element"},
      {"1,", "position 3: empty element"},
      {"-1", "position 1: expected a digit"},
      {"a", "position 1: expected a digit, found 'a'"},
      {"3-1", "position 1: reversed range 3-1"},
      {"0-", "position 3: expected a digit, found the end"},
      {"0-31:2/4", "position 5: the stride form"},
      {"1 2", "position 2: expected ',' or '-'"},
      {"65536", "position 1: CPU id is larger than 65535"},
      {"99999999999999999999999", "larger than"},
      {"0-4000000000", "larger than"},
      {"\xff", "found '\\xff'"},
  };
  for (const auto& [text, want] : cases) {
    auto r = parse_cpulist(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_NE(r.error().message().find(want), std::string::npos)
        << text << " -> " << r.error().message();
  }
}

TEST(Cpulist, RepeatingTheWholeRangeIsBoundedWork) {
  std::string text = "0-65535";
  for (int i = 0; i < 2000; ++i) text += ",0-65535";
  auto r = parse_cpulist(text);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 65536u);
}

TEST(Cpulist, HonoursACallersLimit) {
  EXPECT_TRUE(parse_cpulist("0-7", 7).ok());
  EXPECT_FALSE(parse_cpulist("8", 7).ok());
}

}  // namespace
}  // namespace berth::topo
