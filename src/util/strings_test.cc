#include "util/strings.h"

#include <gtest/gtest.h>

namespace berth::str {
namespace {

TEST(Strings, TrimRemovesAllWhitespaceKinds) {
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("   "), "");
}

TEST(Strings, SplitKeepsEmptyFields) {
  auto v = split("a,,b", ',');
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1], "");
  EXPECT_EQ(split("", ',').size(), 1u);
}

TEST(Strings, SplitWsDropsEmptyFields) {
  auto v = split_ws("  a \t\tb  c\n");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "a");
  EXPECT_EQ(v[2], "c");
  EXPECT_TRUE(split_ws(" \t ").empty());
}

TEST(Strings, ParseUintTable) {
  struct Case {
    const char* in;
    uint64_t max;
    bool ok;
    uint64_t value;
  } cases[] = {
      {"0", 10, true, 0},          {"10", 10, true, 10},   {"11", 10, false, 0},
      {"", 10, false, 0},          {"-1", 10, false, 0},   {"+1", 10, false, 0},
      {"1a", 100, false, 0},       {" 1", 100, false, 0},  {"18446744073709551615", UINT64_MAX, true, UINT64_MAX},
      {"18446744073709551616", UINT64_MAX, false, 0},
      {"6", 5, false, 0},          {"5", 5, true, 5},      {"10", 9, false, 0},
  };
  for (const auto& c : cases) {
    auto r = parse_uint(c.in, c.max);
    EXPECT_EQ(r.ok(), c.ok) << c.in;
    if (c.ok && r.ok()) EXPECT_EQ(*r, c.value) << c.in;
  }
}

TEST(Strings, ParseUintNamesThePosition) {
  auto r = parse_uint("12x4");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("position 3"), std::string::npos) << r.error().message();
}

TEST(Strings, PrintableEscapesControlAndHighBytes) {
  EXPECT_EQ(printable("a\nb\xff"), "a\\x0ab\\xff");
  EXPECT_EQ(printable(std::string(100, 'x'), 4), "xxxx...");
}

TEST(Strings, XmlEscapeTable) {
  struct Case {
    std::string in;
    const char* want;
  };
  const Case cases[] = {
      {"", ""},
      {"plain nid001", "plain nid001"},
      {"a<b&\"c'd>", "a&lt;b&amp;&quot;c&apos;d&gt;"},
      {"&amp;", "&amp;amp;"},  // already escaped text is escaped again: it is data
      {"tab\there", "tab\there"},
      {"a\nb\rc", "a&#x240a;b&#x240d;c"},
      {std::string("nul\0", 4), "nul&#x2400;"},
      {"\x1b[0m", "&#x241b;[0m"},
      {"\x7f \xc3\xa9", "\x7f \xc3\xa9"},  // DEL and UTF-8 pass unchanged
  };
  for (const Case& c : cases) {
    EXPECT_EQ(xml_escape(c.in), c.want) << printable(c.in);
  }
}

TEST(Strings, JsonDeeperThanCountsNestingOutsideStrings) {
  EXPECT_FALSE(str::json_deeper_than(R"({"a":1})", 1));
  EXPECT_TRUE(str::json_deeper_than(R"({"a":[1]})", 1));
  EXPECT_FALSE(str::json_deeper_than(R"({"a":[1]})", 2));
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_FALSE(str::json_deeper_than(R"({"a":"[[[{\"[[["})", 1));
  // Depth is the deepest point, not the number of brackets.
  EXPECT_FALSE(str::json_deeper_than("[[],[],[]]", 2));
  EXPECT_TRUE(str::json_deeper_than(std::string(100000, '['), 512));
  EXPECT_FALSE(str::json_deeper_than("", 0));
  EXPECT_FALSE(str::json_deeper_than("\"unterminated [[[", 0));
}

TEST(Strings, JsonValueEndFindsTheClosingBracket) {
  std::string_view s = R"(x{"a":[1,{"b":"}]"}],"c":"\""}tail)";
  size_t end = str::json_value_end(s, 1, 8);
  ASSERT_NE(end, std::string_view::npos);
  EXPECT_EQ(s.substr(end), "tail");
  EXPECT_EQ(str::json_value_end("[[]]", 0, 2), 4u);
  EXPECT_EQ(str::json_value_end("[[]]", 0, 1), std::string_view::npos);  // too deep
  EXPECT_EQ(str::json_value_end("{\"a\":[1}]}", 0, 8), 9u);  // counts, not kinds
  EXPECT_EQ(str::json_value_end("{\"a\":1", 0, 8), std::string_view::npos);  // open
  EXPECT_EQ(str::json_value_end("x{}", 0, 8), std::string_view::npos);  // not at a value
  EXPECT_EQ(str::json_value_end("{}", 2, 8), std::string_view::npos);
}

TEST(Strings, IsIpAddress) {
  EXPECT_TRUE(is_ip_address("10.0.0.1"));
  EXPECT_TRUE(is_ip_address("fe80::1"));
  EXPECT_FALSE(is_ip_address("node1.cluster.org"));
  EXPECT_FALSE(is_ip_address("1.2.3"));
  EXPECT_FALSE(is_ip_address("1.2.3.4444"));
}

}  // namespace
}  // namespace berth::str
