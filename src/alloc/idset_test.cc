#include "alloc/idset.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::alloc {
namespace {

// The parse result as one string: its canonical encoding and count, or "error: ...".
std::string outcome(const Result<std::vector<idset::Range>>& r) {
  if (!r.ok()) return "error: " + r.error().message();
  return "{" + idset::encode(*r) + "} n=" + std::to_string(idset::count(*r));
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
      {"0-1,2,3-4", "{0-4} n=5"},  // adjacent ranges merge
      {"3-3", "{3} n=1"},
      {"007", "{7} n=1"},  // leading zeros, as strtoul reads them
      {"0,2,4", "{0,2,4} n=3"},
      {"2147483646", "{2147483646} n=1"},
      {"0-2147483646", "{0-2147483646} n=2147483647"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(outcome(idset::parse(c.text)), c.want);
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
      {"1-", "error: position 3: expected a digit, found the end"},
      {"1-2-3", "error: position 4: expected ',' or '-', found '-'"},
      {"3-1", "error: position 1: reversed range 3-1"},
      {"0,5-2", "error: position 3: reversed range 5-2"},
      {"a", "error: position 1: expected a digit, found 'a'"},
      {"1;2", "error: position 2: expected ',' or '-', found ';'"},
      {"[0-3", "error: position 1: '[' without a closing ']'"},
      {"[", "error: position 1: '[' without a closing ']'"},
      {"0-3]", "error: position 4: expected ',' or '-', found ']'"},
      {"[[0]]", "error: position 2: expected a digit, found '['"},
      {"1,1", "error: position 3: id 1 is given twice"},
      {"0-5,3", "error: position 5: id 3 is given twice"},
      {"4-6,0-4", "error: position 5: id 4 is given twice"},
      {"2147483647", "error: position 1: id is larger than 2147483646"},
      {"99999999999999999999999999", "error: position 1: id is larger than 2147483646"},
      {"0-99999999999", "error: position 3: id is larger than 2147483646"},
      {std::string("1\0", 2), "error: position 2: expected ',' or '-', found '\\x00'"},
      {"\xff", "error: position 1: expected a digit, found '\\xff'"},
      {"[1,]", "error: position 4: empty element"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = idset::parse(c.text);
    EXPECT_EQ(outcome(r), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

TEST(Idset, HonoursMaxId) {
  EXPECT_EQ(outcome(idset::parse("0-7", 7)), "{0-7} n=8");
  EXPECT_EQ(outcome(idset::parse("0-8", 7)), "error: position 3: id is larger than 7");
}

TEST(Idset, EncodeRoundTrips) {
  for (const char* text : {"", "0", "0-1", "1,3,5-9,11", "0-2147483646"}) {
    SCOPED_TRACE(text);
    auto a = idset::parse(text);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(idset::encode(*a), text);
    auto b = idset::parse(idset::encode(*a));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
  }
}

}  // namespace
}  // namespace berth::alloc
