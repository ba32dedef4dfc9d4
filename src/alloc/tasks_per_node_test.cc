#include "alloc/tasks_per_node.h"

#include <gtest/gtest.h>

#include <vector>

namespace berth::alloc {
namespace {

using Counts = std::vector<int64_t>;

struct Case {
  const char* text;
  Counts counts;
};

void check_parse(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    auto r = parse_tasks_per_node(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(*r, c.counts) << c.text;
  }
}

TEST(TasksPerNode, ParsesCountsAndRepeats) {
  check_parse({
      {"4", {4}},
      {"2(x3),1", {2, 2, 2, 1}},
      {"1,2,3", {1, 2, 3}},
      {"0", {0}},  // SLURM_JOB_CPUS_PER_NODE can legitimately report none
      {"8(x1)", {8}},
      {"1(x2),3(x2)", {1, 1, 3, 3}},
      {"007", {7}},
      {"2147483647", {2147483647}},
      {"5(x0002)", {5, 5}},
  });
}

TEST(TasksPerNode, ParsesOneHundredThousandNodes) {
  auto r = parse_tasks_per_node("4(x100000)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 100000u);
  EXPECT_EQ(r->front(), 4);
  EXPECT_EQ(r->back(), 4);
}

struct ErrorCase {
  const char* text;
  const char* message;
};

void check_errors(const std::vector<ErrorCase>& cases, size_t max_items = 10'000'000) {
  for (const auto& c : cases) {
    auto r = parse_tasks_per_node(c.text, max_items);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput) << c.text;
    EXPECT_EQ(r.error().message(), c.message) << c.text;
  }
}

TEST(TasksPerNode, RejectsEmptyInputAndItems) {
  check_errors({
      {"", "position 1: empty list"},
      {",", "position 1: empty item"},
      {"1,", "position 3: empty item"},
      {"1,,2", "position 3: empty item"},
  });
}

TEST(TasksPerNode, RejectsMissingXOrParen) {
  check_errors({
      {"2(3)", "position 3: expected 'x' after '(', found '3'"},
      {"2(", "position 3: expected 'x' after '(', found end of input"},
      {"2(x3", "position 5: missing ')'"},
      {"2(x3]", "position 5: expected ')', found ']'"},
      {"2(x)", "position 4: expected a repeat count after 'x', found ')'"},
      {"2(X3)", "position 3: expected 'x' after '(', found 'X'"},
      {"2(x3)4", "position 6: expected ',' or the end after an item, found '4'"},
      {"2x3", "position 2: expected ',' or the end after an item, found 'x'"},
  });
}

TEST(TasksPerNode, RejectsNonDigits) {
  check_errors({
      {"a", "position 1: expected a count, found 'a'"},
      {"-1", "position 1: expected a count, found '-'"},
      {"+1", "position 1: expected a count, found '+'"},
      {"(x2)", "position 1: expected a count, found '('"},
      {"1,\xff", "position 3: expected a count, found '\\xff'"},
  });
}

TEST(TasksPerNode, RejectsWhitespace) {
  check_errors({
      {" 1", "position 1: whitespace is not allowed"},
      {"1, 2", "position 3: whitespace is not allowed"},
      {"1 ", "position 2: whitespace is not allowed"},
      {"2(x 3)", "position 4: whitespace is not allowed"},
  });
}

TEST(TasksPerNode, RejectsZeroRepeat) {
  check_errors({
      {"2(x0)", "position 4: repeat count must be at least 1"},
      {"1,2(x000)", "position 6: repeat count must be at least 1"},
  });
}

TEST(TasksPerNode, RejectsCountAbove2To31) {
  check_errors({
      {"2147483648", "position 1: count 2147483648 is larger than 2147483647"},
      {"1,99999999999999999999999",
       "position 3: count 99999999999999999999999 is larger than 2147483647"},
  });
}

TEST(TasksPerNode, RejectsMoreThanMaxItems) {
  check_errors(
      {
          {"1(x11)", "position 1: expands to more than 10 items"},
          {"1(x5),2(x6)", "position 7: expands to more than 10 items"},
          {"1,1,1,1,1,1,1,1,1,1,1", "position 21: expands to more than 10 items"},
          {"1(x99999999999999999999999)", "position 1: expands to more than 10 items"},
      },
      10);
  auto r = parse_tasks_per_node("1(x5),2(x5)", 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 10u);
  // The default bound stops a hostile repeat before anything is allocated.
  check_errors({{"1(x18446744073709551615)", "position 1: expands to more than 10000000 items"}});
}

}  // namespace
}  // namespace berth::alloc
