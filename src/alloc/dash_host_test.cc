#include <gtest/gtest.h>

#include "alloc/source.h"

namespace berth::alloc {
namespace internal {
// dash_host.cc: parse_dash_host with its expansion bound as a parameter.
Result<std::vector<HostToken>> parse_dash_host(std::string_view text, std::string_view origin,
                                               size_t max_names);
}  // namespace internal

namespace {

// One line per token: "name/slots" with '!' when explicit, "name/*", "+nI", "+e", "+e:N".
std::string render(const std::vector<HostToken>& tokens) {
  std::string out;
  for (const HostToken& t : tokens) {
    if (!out.empty()) out += ' ';
    switch (t.kind) {
      case HostToken::kName:
        out += t.name + "/";
        out += t.slots_star ? std::string("*") : std::to_string(t.slots);
        if (t.slots_explicit) out += '!';
        break;
      case HostToken::kRelativeIndex:
        out += "+n" + std::to_string(t.index);
        break;
      case HostToken::kEmpty:
        out += t.count < 0 ? std::string("+e") : "+e:" + std::to_string(t.count);
        break;
    }
  }
  return out;
}

struct Good {
  std::string text;
  std::string want;
};

TEST(DashHost, ParsesEveryGrammarFeature) {
  const Good cases[] = {
      {"a", "a/1"},
      {"a,b", "a/1 b/1"},
      {"a:4", "a/4!"},
      {"a:01", "a/1!"},
      {"a:2147483647", "a/2147483647!"},
      {"a:*", "a/*"},
      {"a:auto", "a/*"},
      {"node1.example.org", "node1.example.org/1"},
      {"a_b-c.d", "a_b-c.d/1"},
      {"15", "15/1"},
      {"10.0.0.1:2", "10.0.0.1/2!"},
      {"+n0", "+n0"},
      {"+N12", "+n12"},
      {"+n007", "+n7"},
      {"+e", "+e"},
      {"+E", "+e"},
      {"+e:3", "+e:3"},
      {"+n1,+n1", "+n1 +n1"},
  };
  for (const Good& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << c.text;
  }
}

TEST(DashHost, RepeatedNameAddsSlotsAndMakesThemExplicit) {
  const Good cases[] = {
      {"a,a", "a/2!"},         {"a:2,a", "a/3!"},     {"a,a:2", "a/3!"},
      {"a:2,a:3", "a/5!"},     {"a,b,a", "a/2! b/1"},  // first-appearance order
      {"nid[1,1]", "nid1/2!"},
  };
  for (const Good& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << c.text;
  }
}

// PRRTE once dropped every token after +e:N and leaked ':*' into the next token.
TEST(DashHost, PerTokenStateDoesNotLeak) {
  const Good cases[] = {
      {"a,+e:2,b", "a/1 +e:2 b/1"},
      {"a:*,b", "a/* b/1"},
      {"a:4,b", "a/4! b/1"},
  };
  for (const Good& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << c.text;
  }
}

TEST(DashHost, ExpandsHostlistExpressions) {
  const Good cases[] = {
      {"nid[01-03]:2", "nid01/2! nid02/2! nid03/2!"},
      {"nid[1,3],b", "nid1/1 nid3/1 b/1"},
      {"r[1-2]n[1-2]", "r1n1/1 r1n2/1 r2n1/1 r2n2/1"},
      {"nid[1-2]:*", "nid1/* nid2/*"},
  };
  for (const Good& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << c.text;
  }
}

TEST(DashHost, AcceptsIpv6BareOrBracketed) {
  const Good cases[] = {
      {"fe80::1", "fe80::1/1"},
      {"::1", "::1/1"},
      {"[fe80::1]", "fe80::1/1"},
      {"[fe80::1]:4", "fe80::1/4!"},
      {"[::ffff:10.0.0.1]:2", "::ffff:10.0.0.1/2!"},
      {"fe80::1,a:2", "fe80::1/1 a/2!"},
  };
  for (const Good& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << c.text;
  }
}

struct Bad {
  std::string text;
  int position;
  std::string says;
};

TEST(DashHost, RefusesMalformedTokensNamingThePosition) {
  const Bad cases[] = {
      {"", 1, "empty host list"},
      {"a,,b", 3, "empty host name"},
      {",a", 1, "empty host name"},
      {"a,", 3, "empty host name"},
      {":4", 1, "empty host name before ':'"},
      {"a:0", 3, "out of range"},
      {"a:-1", 3, "not a number"},
      {"a:+2", 3, "not a number"},
      {"a:x", 3, "not a number"},
      {"a:", 3, "expected a slot count"},
      {"a:2147483648", 3, "out of range"},
      {"a:99999999999999999999999", 3, "out of range"},
      {"+n", 1, "+n needs a node index"},
      {"+nx", 3, "not a number"},
      {"+n-1", 3, "not a number"},
      {"+n1:4", 4, "takes no slot count"},
      {"+n2147483648", 3, "out of range"},
      {"+", 1, "not a relative token"},
      {"+x", 1, "not a relative token"},
      {"+all", 1, "not a relative token"},
      {"+e5", 3, "after a ':'"},
      {"+e:", 4, "expected a +e:N count"},
      {"+e:0", 4, "out of range"},
      {"+e:x", 4, "not a number"},
      {"a:*,a", 5, "':*'"},
      {"a,a:*", 3, "':*'"},
      {"a:2147483647,a", 14, "adds up to more than"},
  };
  for (const Bad& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_FALSE(r.ok()) << c.text << " -> " << render(*r);
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    const std::string prefix = "--host: position " + std::to_string(c.position) + ": ";
    EXPECT_EQ(r.error().message().rfind(prefix, 0), 0u) << c.text << ": " << r.error().message();
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << c.text << ": " << r.error().message();
  }
}

TEST(DashHost, RefusesBadHostNames) {
  const Bad cases[] = {
      {"a b", 2, "whitespace"},
      {"a\tb", 2, "whitespace"},
      {" a", 1, "whitespace"},
      {"-a", 1, "cannot start with '-'"},
      {".a", 1, "cannot start with '.'"},
      {"a@b", 2, "'@'"},
      {"a/b", 2, "character '/'"},
      {"a$b", 2, "character '$'"},
      {"a\x01", 2, "byte '\\x01'"},
      {"a\x7f", 2, "byte '\\x7f'"},
      {"caf\xc3\xa9", 4, "byte '\\xc3'"},
      {std::string("a\0b", 3), 2, "byte '\\x00'"},
      {std::string(256, 'a'), 256, "longer than 255"},
      {"fe80::1::2", 1, "not an IPv6 address"},
      {"a:4:5", 1, "not an IPv6 address"},
      {"fe80::1%eth0", 1, "not an IPv6 address"},
      {"[fe80::1", 1, "never closed"},
      {"[fe80::1]x", 10, "expected ':<slots>'"},
      {"[fe80::1]:0", 11, "out of range"},
      {"[a:g]", 4, "not an IPv6 address"},
      {"nid[1-", 4, "never closed"},
      {"nid[3-1]", 5, "reversed range"},
      {"nid]", 4, "without a matching"},
      {"nid[1-2]@x", 1, "expands to 'nid1@x'"},
  };
  for (const Bad& c : cases) {
    auto r = parse_dash_host(c.text, "--host");
    ASSERT_FALSE(r.ok()) << c.text << " -> " << render(*r);
    const std::string prefix = "--host: position " + std::to_string(c.position) + ": ";
    EXPECT_EQ(r.error().message().rfind(prefix, 0), 0u) << c.text << ": " << r.error().message();
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << c.text << ": " << r.error().message();
  }
}

TEST(DashHost, BoundsHostlistExpansion) {
  // Refused by the hostlist parser's count, before a single name is allocated.
  auto one = parse_dash_host("n[1-1000001]", "--host");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().message(), "--host: position 2: expands to more than 1000000 names");
  EXPECT_TRUE(parse_dash_host("n[1-2][1-3]", "--host").ok());
}

TEST(DashHost, BoundsTheWholeListNotJustEachExpression) {
  // Each expression fits alone; together they pass the bound (10 here, 10^6 in use).
  EXPECT_TRUE(internal::parse_dash_host("n[1-5],m[1-5]", "--host", 10).ok());
  auto two = internal::parse_dash_host("n[1-6],m[1-6]", "--host", 10);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message(), "--host: position 8: the list names more than 10 hosts in all");
  // Plain names are not expansions and do not count.
  EXPECT_TRUE(internal::parse_dash_host("n[1-10],a,b,c", "--host", 10).ok());
}

TEST(DashHost, ErrorsStartWithTheOrigin) {
  auto r = parse_dash_host("a:x", "--host (2 of 3)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("--host (2 of 3): position 3: ", 0), 0u);
}

}  // namespace
}  // namespace berth::alloc
