#include "alloc/hostlist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "util/strings.h"

namespace berth::alloc::hostlist {
namespace {

using Names = std::vector<std::string>;

// Expands `expr` or fails the test with the error message.
Names must_expand(std::string_view expr, size_t max_names = kDefaultMaxNames) {
  auto r = expand(expr, max_names);
  EXPECT_TRUE(r.ok()) << expr << ": " << r.error().message();
  return r.ok() ? *r : Names{};
}

// The names of an expression written out space-separated, for compact tables.
Names words(std::string_view s) {
  Names out;
  for (std::string_view w : str::split_ws(s)) out.emplace_back(w);
  return out;
}

struct ExpandCase {
  const char* expr;
  const char* names;  // space-separated
};

void check_expand(const std::vector<ExpandCase>& cases) {
  for (const auto& c : cases) {
    EXPECT_EQ(must_expand(c.expr), words(c.names)) << c.expr;
  }
}

TEST(Hostlist, ExpandsPlainNamesAndLists) {
  check_expand({
      {"n1", "n1"},
      {"login", "login"},
      {"a,b,c", "a b c"},
      {"node-1.cluster.example", "node-1.cluster.example"},
      {"a,a", "a a"},  // duplicates are kept
      {"n-", "n-"},
  });
}

TEST(Hostlist, ExpandsRangesAndCommaListsInsideBrackets) {
  check_expand({
      {"nid[0001-0004,0007]", "nid0001 nid0002 nid0003 nid0004 nid0007"},
      {"n[1-3]", "n1 n2 n3"},
      {"n[5]", "n5"},
      {"n[3,1,2]", "n3 n1 n2"},  // order as written
      {"n[1,1]", "n1 n1"},
      {"n[1-2,2-3]", "n1 n2 n2 n3"},
      {"n[0-0]", "n0"},
      {"[1-3]", "1 2 3"},  // a group needs no prefix
      {"n[999999999999999998-999999999999999999]", "n999999999999999998 n999999999999999999"},
  });
}

TEST(Hostlist, ExpandsSeveralGroupsLeftmostSlowest) {
  check_expand({
      {"rack[1-2]-node[01-02]", "rack1-node01 rack1-node02 rack2-node01 rack2-node02"},
      {"[1-2][3-4]", "13 14 23 24"},
      {"a[1-2]b[1,3]c[7]", "a1b1c7 a1b3c7 a2b1c7 a2b3c7"},
      {"r[1-2]n[1-3]", "r1n1 r1n2 r1n3 r2n1 r2n2 r2n3"},
  });
}

// With three or more groups Slurm 22.05 leaves the documented order: `scontrol show
// hostnames r[1-2]-c[1-2]-n[1-2]` varies n fastest, then r, then c (r1-c1-n1 r1-c1-n2
// r2-c1-n1 ...), an artifact of how its parser recurses. berth keeps the one rule for
// any number of groups; the names are the same, only the order differs.
TEST(Hostlist, ExpandsThreeGroupsInOneOrderUnlikeSlurm) {
  check_expand({
      {"r[1-2]-c[1-2]-n[1-2]",
       "r1-c1-n1 r1-c1-n2 r1-c2-n1 r1-c2-n2 r2-c1-n1 r2-c1-n2 r2-c2-n1 r2-c2-n2"},
  });
}

TEST(Hostlist, ExpandsSuffixesAfterBrackets) {
  check_expand({
      {"a,b[3-4]x,c", "a b3x b4x c"},
      {"n[1-2].ib", "n1.ib n2.ib"},
      {"n[1-2]-x", "n1-x n2-x"},
  });
}

// Slurm pads to the width of a range's first bound (hostlist.c, _parse_single_range:
// range->width = strlen(lo)); `scontrol show hostnames` 22.05 prints exactly these.
TEST(Hostlist, ZeroPaddingMatchesSlurm) {
  check_expand({
      {"n[8-10]", "n8 n9 n10"},
      {"n[08-10]", "n08 n09 n10"},
      {"n[008-10]", "n008 n009 n010"},
      {"n[1-005]", "n1 n2 n3 n4 n5"},
      {"n[01-2]", "n01 n02"},
      {"n[098-100]", "n098 n099 n100"},
      {"n[0-1]", "n0 n1"},
      {"n[00-01]", "n00 n01"},
      {"n[7,08,009]", "n7 n08 n009"},  // each range has its own width
  });
}

// 10^5 names, the largest machines berth targets; 10^6 is timed in a release build by
// bench/hostlist rather than here, where ASan makes it take seconds.
TEST(Hostlist, ExpandsAndCompressesOneHundredThousandNames) {
  Names names = must_expand("n[000001-100000]");
  ASSERT_EQ(names.size(), 100000u);
  EXPECT_EQ(names.front(), "n000001");
  EXPECT_EQ(names[49999], "n050000");
  EXPECT_EQ(names.back(), "n100000");
  EXPECT_EQ(compress(names), "n[000001-100000]");
}

struct ErrorCase {
  const char* expr;
  const char* message;
};

void check_errors(const std::vector<ErrorCase>& cases, size_t max_names = kDefaultMaxNames) {
  for (const auto& c : cases) {
    auto r = expand(c.expr, max_names);
    ASSERT_FALSE(r.ok()) << c.expr;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput) << c.expr;
    EXPECT_EQ(r.error().message(), c.message) << c.expr;
  }
}

TEST(Hostlist, ExpandRejectsEmptyInputAndEmptyItems) {
  check_errors({
      {"", "position 1: empty hostlist"},
      {",", "position 1: empty item"},
      {",a", "position 1: empty item"},
      {"a,,b", "position 3: empty item"},
      {"a,", "position 3: empty item"},
  });
}

TEST(Hostlist, ExpandRejectsUnbalancedBrackets) {
  check_errors({
      {"n[1-2", "position 2: '[' is never closed"},
      {"n[1-", "position 2: '[' is never closed"},
      {"n[", "position 2: '[' is never closed"},
      {"n[1,", "position 2: '[' is never closed"},
      {"n1]", "position 3: ']' without a matching '['"},
      {"n[1-2]]", "position 7: ']' without a matching '['"},
      {"]", "position 1: ']' without a matching '['"},
  });
}

TEST(Hostlist, ExpandRejectsNestedBrackets) {
  check_errors({
      {"n[1[2]]", "position 4: nested '[' is not allowed"},
      {"n[[1]]", "position 3: nested '[' is not allowed"},
      {"n[1-[2]]", "position 5: nested '[' is not allowed"},
  });
}

TEST(Hostlist, ExpandRejectsEmptyGroupsAndRanges) {
  check_errors({
      {"n[]", "position 2: empty bracket group '[]'"},
      {"n[,1]", "position 3: empty range: expected a digit before ','"},
      {"n[1,]", "position 5: empty range: expected a digit before ']'"},
      {"n[1,,2]", "position 5: empty range: expected a digit before ','"},
      {"n[1-]", "position 5: empty range: expected a digit after '-' before ']'"},
  });
}

TEST(Hostlist, ExpandRejectsNonDigitInRange) {
  check_errors({
      {"n[a]", "position 3: expected a digit, found 'a'"},
      {"n[-1]", "position 3: expected a digit, found '-'"},
      {"n[1-a]", "position 5: expected a digit after '-', found 'a'"},
      {"n[1-2-3]", "position 6: expected ',' or ']' after a range, found '-'"},
      {"n[1x]", "position 4: expected ',' or ']' after a range, found 'x'"},
      {"n[+1]", "position 3: expected a digit, found '+'"},
      {"n[\xff]", "position 3: expected a digit, found '\\xff'"},
  });
}

TEST(Hostlist, ExpandRejectsReversedRange) {
  check_errors({
      {"n[1,9-3]", "position 5: reversed range 9-3"},
      {"n[10-09]", "position 3: reversed range 10-09"},
  });
}

TEST(Hostlist, ExpandRejectsNumbersWiderThan18Digits) {
  check_errors({
      {"n[1234567890123456789]",
       "position 3: number '1234567890123456789' is wider than 18 digits"},
      {"n[1-0000000000000000001]",
       "position 5: number '0000000000000000001' is wider than 18 digits"},
  });
  // 18 digits is fine, leading zeros included.
  EXPECT_EQ(must_expand("n[000000000000000001]"), words("n000000000000000001"));
}

TEST(Hostlist, ExpandRejectsWhitespaceAndControlCharacters) {
  check_errors({
      {"n1 n2", "position 3: whitespace is not allowed in a hostlist"},
      {" n1", "position 1: whitespace is not allowed in a hostlist"},
      {"n1\n", "position 3: whitespace is not allowed in a hostlist"},
      {"n[1, 2]", "position 5: whitespace is not allowed in a hostlist"},
      {"n[1 ]", "position 4: whitespace is not allowed in a hostlist"},
      {"n[\t1]", "position 3: whitespace is not allowed in a hostlist"},
      {"a\x01", "position 2: control character '\\x01' is not allowed"},
  });
}

TEST(Hostlist, ExpandRejectsEmbeddedNul) {
  auto r = expand(std::string_view("a\0b", 3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "position 2: control character '\\x00' is not allowed");
}

TEST(Hostlist, ExpandRejectsMoreThanMaxNames) {
  check_errors(
      {
          {"n[1-11]", "position 2: expands to more than 10 names"},
          {"a,b,c,d,e,f,g,h,i,j,k", "position 21: expands to more than 10 names"},
          {"n[1-5],m[1-6]", "position 9: expands to more than 10 names"},
          {"r[1-4]n[1-3]", "position 8: expands to more than 10 names"},
          // Saturating arithmetic: these would overflow 64 bits if multiplied out.
          {"n[0-999999999999999999][0-999999999999999999]",
           "position 2: expands to more than 10 names"},
          {"n[0-999999999999999999,0-999999999999999999]",
           "position 2: expands to more than 10 names"},
      },
      10);
  EXPECT_EQ(must_expand("n[1-10]", 10).size(), 10u);
  EXPECT_EQ(must_expand("r[1-2]n[1-5]", 10).size(), 10u);
  check_errors({{"n1", "position 1: expands to more than 0 names"}}, 0);
}

TEST(Hostlist, ExpandReportsTheFirstErrorLeftToRight) {
  check_errors({
      {"n[9-3],m[", "position 3: reversed range 9-3"},
      {"a,,n[", "position 3: empty item"},
  });
}

// count() is expand() without the names: the same total, or the same error.
TEST(Hostlist, CountAgreesWithExpand) {
  const char* exprs[] = {
      "a",          "a,b,c",  "n[1-10]",     "r[1-2]n[1-5]", "n[1-5],m[1-6]", "n[1-11]",
      "n[9-3],m[",  "a,,n[",  "",            "n[0-999999999999999999][0-999999999999999999]",
      "n[01-3]x,y", "n[1,1]", "a b",
  };
  for (const char* e : exprs) {
    auto names = expand(e, 10);
    auto n = count(e, 10);
    ASSERT_EQ(n.ok(), names.ok()) << e;
    if (n.ok()) {
      EXPECT_EQ(*n, names->size()) << e;
    } else {
      EXPECT_EQ(n.error().message(), names.error().message()) << e;
    }
  }
  // Counting makes no names, so a bound far past what could be allocated is fine.
  auto big = count("n[0-999999999999]", 1'000'000'000'000);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, 1'000'000'000'000u);
}

TEST(Hostlist, ParsedNamesAreExpandsNamesOneAtATime) {
  const char* exprs[] = {
      "a",          "a,b,c",  "n[1-10]",     "r[1-2]n[1-5]", "n[1-5],m[1-6]", "n[1-11]",
      "n[9-3],m[",  "a,,n[",  "",            "n[0-999999999999999999][0-999999999999999999]",
      "n[01-3]x,y", "n[1,1]", "a b",         "r[1-2]-c[1-2]-n[08-10]",
  };
  for (const char* e : exprs) {
    auto names = expand(e, 12);
    auto parsed = parse(e, 12);
    ASSERT_EQ(parsed.ok(), names.ok()) << e;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().message(), names.error().message()) << e;
      continue;
    }
    EXPECT_EQ(parsed->size(), names->size()) << e;
    std::vector<std::string> one_by_one;
    parsed->for_each([&](std::string_view n) { one_by_one.emplace_back(n); });
    EXPECT_EQ(one_by_one, *names) << e;
    // Again: the names are made afresh each time, from the expression's own copy.
    one_by_one.clear();
    auto copy = *parsed;
    copy.for_each([&](std::string_view n) { one_by_one.emplace_back(n); });
    EXPECT_EQ(one_by_one, *names) << e;
  }
}

TEST(Hostlist, ParsedNamesOutliveTheText) {
  auto parsed = [] {
    std::string text = "node[98-101],login";
    auto p = parse(text);
    text.assign(text.size(), 'x');  // the caller's text changes and goes
    return p;
  }();
  ASSERT_TRUE(parsed.ok());
  std::vector<std::string> names;
  parsed->for_each([&](std::string_view n) { names.emplace_back(n); });
  EXPECT_EQ(names, words("node98 node99 node100 node101 login"));
}

// compress: each case gives names and the exact expression expected.
struct CompressCase {
  const char* names;  // space-separated
  const char* expr;
};

void check_compress(const std::vector<CompressCase>& cases) {
  for (const auto& c : cases) EXPECT_EQ(compress(words(c.names)), c.expr) << c.names;
}

TEST(Hostlist, CompressMergesConsecutiveNumbers) {
  check_compress({
      {"", ""},
      {"n1", "n1"},
      {"login", "login"},
      {"n1 n2 n3", "n[1-3]"},
      {"n1 n2 n3 n5", "n[1-3,5]"},
      {"n5 n1 n2", "n[5,1-2]"},  // order kept
      {"n1 n2 n1", "n[1-2,1]"},  // duplicates kept
      {"n1 n1", "n[1,1]"},
      {"nid0001 nid0002 nid0003 nid0004 nid0007", "nid[0001-0004,0007]"},
      {"a b3x b4x c", "a,b[3-4]x,c"},
      {"n1 m1 n2", "n1,m1,n2"},
      {"rack1-node01 rack1-node02 rack2-node01 rack2-node02",
       "rack1-node[01-02],rack2-node[01-02]"},
      {"n1.ib n2.ib n1.eth", "n[1-2].ib,n1.eth"},
      {"1 2 3", "[1-3]"},
  });
}

// A range keeps going while the next name is what the range's padding would print:
// Slurm's compress (hostlist.c, _width_equiv) makes the same decisions.
TEST(Hostlist, CompressWidthRulesMatchSlurm) {
  check_compress({
      {"n8 n9 n10", "n[8-10]"},
      {"n08 n09 n10", "n[08-10]"},
      {"n098 n099 n100", "n[098-100]"},
      {"n98 n99 n100", "n[98-100]"},
      {"n9 n010", "n[9,010]"},
      {"n09 n010", "n[09,010]"},
      {"n1 n01", "n[1,01]"},
      {"n0 n1", "n[0-1]"},
  });
}

TEST(Hostlist, CompressLeavesNamesWithHugeNumbersLiteral) {
  Names names = {"n1234567890123456789", "n1234567890123456790"};
  EXPECT_EQ(compress(names), "n1234567890123456789,n1234567890123456790");
  EXPECT_EQ(must_expand(compress(names)), names);
}

TEST(Hostlist, CompressRoundTripsThroughExpand) {
  const char* exprs[] = {
      "n1",
      "a,b[3-4]x,c",
      "nid[0001-0004,0007]",
      "rack[1-2]-node[01-02]",
      "n[8-10]",
      "n[08-10]",
      "n[008-10]",
      "n[1-005]",
      "n[7,08,009,10]",
      "n[9,010,11]",
      "n[3,1,2,2,1]",
      "[0-12][0-3]",
      "a[1-2]b[1,3]c[7],a1b1c7",
      "x[0-3]y,x[4-5]z,x[6]y",
      "n[999999999999999990-999999999999999999]",
      "n[0000001-0100000]",
      "a1b,a2b,a3c,a4c,a,b",
      "n-[1-3]-[4-5]",
  };
  for (const char* expr : exprs) {
    Names names = must_expand(expr);
    std::string compressed = compress(names);
    EXPECT_EQ(must_expand(compressed), names) << expr << " -> " << compressed;
  }
}

TEST(Hostlist, CompressMergesOnlyTheLastNumber) {
  // One group per (rack, chassis) pair: compress does not rebuild several groups.
  Names multi = must_expand("r[01-10]-c[1-10]-n[001-100]");
  std::string compressed = compress(multi);
  EXPECT_EQ(must_expand(compressed), multi);
  EXPECT_EQ(compressed.substr(0, 35), "r01-c1-n[001-100],r01-c2-n[001-100]");
  EXPECT_EQ(std::count(compressed.begin(), compressed.end(), '['), 100);
}

}  // namespace
}  // namespace berth::alloc::hostlist
