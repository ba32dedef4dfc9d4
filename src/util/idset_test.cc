#include "util/idset.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::idset {
namespace {

// The parse result as one string: its canonical encoding and count, or "error: ...".
std::string outcome(const Result<std::vector<Range>>& r) {
  if (!r.ok()) return "error: " + r.error().message();
  return "{" + encode(*r) + "} n=" + std::to_string(count(*r));
}

std::vector<int> range(int first, int last) {
  std::vector<int> v;
  for (int i = first; i <= last; ++i) v.push_back(i);
  return v;
}

TEST(Idset, Parses) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"", "{} n=0"},
      {"[]", "{} n=0"},
      {"0", "{0} n=1"},
      {"0-3", "{0-3} n=4"},
      {"0-3,7", "{0-3,7} n=5"},
      {"[0-3,7]", "{0-3,7} n=5"},
      {"5,1-2", "{1-2,5} n=3"},    // any order; sorted
      {"8,0-3", "{0-3,8} n=5"},    // any order; sorted
      {"0-1,2,3-4", "{0-4} n=5"},  // adjacent ranges merge
      {"3-3", "{3} n=1"},
      {"007", "{7} n=1"},  // leading zeros, as strtoul reads them
      {"0,2,4", "{0,2,4} n=3"},
      {"0,128", "{0,128} n=2"},                // sysfs online, its newline stripped
      {"1-51,53-103", "{1-51,53-103} n=102"},  // Aurora's usable cores
      {"2147483646", "{2147483646} n=1"},
      {"0-2147483646", "{0-2147483646} n=2147483647"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(outcome(parse(c.text)), c.want);
  }
}

TEST(Idset, RejectsMalformedInput) {
  struct Case {
    std::string text;
    const char* want;
  };
  const Case cases[] = {
      {",", "error: position 1: empty element"},
      {"1,,2", "error: position 3: empty element"},
      {"1,", "error: position 3: empty element"},
      {"-1", "error: position 1: expected a digit, found '-'"},
      {"+1", "error: position 1: expected a digit, found '+'"},
      {" 1", "error: position 1: expected a digit, found ' '"},
      {"1 ", "error: position 2: expected ',' or '-', found ' '"},
      {"1 2", "error: position 2: expected ',' or '-', found ' '"},
      {"0\n", "error: position 2: expected ',' or '-', found '\\x0a'"},
      {"\n", "error: position 1: expected a digit, found '\\x0a'"},
      {"1-", "error: position 3: expected a digit, found the end"},
      {"1-2-3", "error: position 4: expected ',' or '-', found '-'"},
      {"3-1", "error: position 1: reversed range 3-1"},
      {"0,5-2", "error: position 3: reversed range 5-2"},
      {"a", "error: position 1: expected a digit, found 'a'"},
      {"1;2", "error: position 2: expected ',' or '-', found ';'"},
      {"0-31:2/4", "error: position 5: the kernel's stride form 'A-B:N/M' is not accepted"},
      {"[0-3", "error: position 1: '[' without a closing ']'"},
      {"[", "error: position 1: '[' without a closing ']'"},
      {"0-3]", "error: position 4: expected ',' or '-', found ']'"},
      {"[[0]]", "error: position 2: expected a digit, found '['"},
      {"1,1", "error: position 3: id 1 is given twice"},
      {"3,3", "error: position 3: id 3 is given twice"},
      {"0-5,3", "error: position 5: id 3 is given twice"},
      {"4-6,0-4", "error: position 5: id 4 is given twice"},
      {"0-3,2-5,5", "error: position 5: id 2 is given twice"},
      {"2147483647", "error: position 1: id is larger than 2147483646"},
      {"99999999999999999999999999", "error: position 1: id is larger than 2147483646"},
      {"0-99999999999", "error: position 3: id is larger than 2147483646"},
      {std::string("1\0", 2), "error: position 2: expected ',' or '-', found '\\x00'"},
      {"\xff", "error: position 1: expected a digit, found '\\xff'"},
      {"[1,]", "error: position 4: empty element"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = parse(c.text);
    EXPECT_EQ(outcome(r), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

TEST(Idset, HonoursMaxId) {
  EXPECT_EQ(outcome(parse("0-7", 7)), "{0-7} n=8");
  EXPECT_EQ(outcome(parse("0-8", 7)), "error: position 3: id is larger than 7");
}

TEST(Idset, EncodeRoundTrips) {
  for (const char* text : {"", "0", "0-1", "1,3,5-9,11", "0-2147483646"}) {
    SCOPED_TRACE(text);
    auto a = parse(text);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(encode(*a), text);
    auto b = parse(encode(*a));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
  }
}

TEST(Idset, ParseIdsExpandsToAscendingIds) {
  struct Case {
    const char* text;
    std::vector<int> ids;
    const char* canonical;
  };
  std::vector<int> aurora = range(1, 51);
  for (int i : range(53, 103)) aurora.push_back(i);
  const Case cases[] = {
      {"", {}, ""},
      {"0", {0}, "0"},
      {"0-3", {0, 1, 2, 3}, "0-3"},
      {"0,128", {0, 128}, "0,128"},
      {"0-1,4", {0, 1, 4}, "0-1,4"},
      {"8,0-3", {0, 1, 2, 3, 8}, "0-3,8"},
      {"[2-3]", {2, 3}, "2-3"},
      {"1-51,53-103", aurora, "1-51,53-103"},
      {"0-65535", range(0, 65535), "0-65535"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = parse_ids(c.text);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, c.ids);
    EXPECT_EQ(encode_ids(*r), c.canonical);
  }
}

TEST(Idset, ParseIdsIsBoundedByTheCpuLimit) {
  const std::pair<const char*, const char*> cases[] = {
      {"65536", "position 1: id is larger than 65535"},
      {"0-4000000000", "position 3: id is larger than 65535"},
      {"99999999999999999999999", "position 1: id is larger than 65535"},
      {"0-65535,0-65535", "position 9: id 0 is given twice"},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    auto r = parse_ids(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_EQ(r.error().message(), want);
  }
  EXPECT_TRUE(parse_ids("0-7", 7).ok());
  EXPECT_FALSE(parse_ids("8", 7).ok());
}

TEST(Idset, RepeatingTheWholeRangeIsRefusedNotExpanded) {
  std::string text = "0-65535";
  for (int i = 0; i < 2000; ++i) text += ",0-65535";
  auto r = parse_ids(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "position 9: id 0 is given twice");
}

TEST(Idset, EncodeIdsWritesRunsInTheOrderGiven) {
  // Validation messages encode lists that failed validation: never reordered.
  EXPECT_EQ(encode_ids({}), "");
  EXPECT_EQ(encode_ids({3, 2, 1}), "3,2,1");
  EXPECT_EQ(encode_ids({0, 1, 1, 2}), "0-1,1-2");
}

}  // namespace
}  // namespace berth::idset
