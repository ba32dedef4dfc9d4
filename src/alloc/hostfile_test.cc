#include <gtest/gtest.h>

#include "alloc/source.h"

namespace berth::alloc {
namespace internal {
// hostfile.cc: parse_hostfile with its bound as a parameter.
Result<Hostfile> parse_hostfile(std::string_view text, std::string_view origin, size_t max_names);
}  // namespace internal

namespace {

// "name/slots" + '!' when given + "<max" + "@user"; exclusions as "^name"; space-separated.
std::string render(const Hostfile& hf) {
  std::string out;
  auto sep = [&] {
    if (!out.empty()) out += ' ';
  };
  for (const NodeSpec& n : hf.nodes) {
    sep();
    out += n.name + "/" + std::to_string(n.slots);
    if (n.slots_given) out += '!';
    if (n.slots_max != 0) out += "<" + std::to_string(n.slots_max);
    if (!n.user.empty()) out += "@" + n.user;
  }
  for (const std::string& e : hf.excluded) {
    sep();
    out += "^" + e;
  }
  return out;
}

struct Good {
  std::string text;
  std::string want;
};

void expect_all(const std::vector<Good>& cases) {
  for (const Good& c : cases) {
    auto r = parse_hostfile(c.text, "hosts");
    ASSERT_TRUE(r.ok()) << testing::PrintToString(c.text) << ": " << r.error().message();
    EXPECT_EQ(render(*r), c.want) << testing::PrintToString(c.text);
  }
}

TEST(Hostfile, ToleratesLayout) {
  expect_all({
      {"", ""},
      {"\n\n\n", ""},
      {"# only a comment\n", ""},
      {"a", "a/1"},  // no newline at the end
      {"a\n", "a/1"},
      {"a\r\nb\r\n", "a/1 b/1"},
      {"a\r\nb", "a/1 b/1"},
      {"  a  \t\n", "a/1"},
      {"a\v\f\n", "a/1"},
      {"\n\na\n\n", "a/1"},
      {"a # a comment\n", "a/1"},
      {"a#comment\n", "a/1"},
      {"a slots=2 # big one\n", "a/2!"},
      {"   # indented comment\na\n", "a/1"},
      {"\xEF\xBB\xBF"
       "a\n",
       "a/1"},                                 // UTF-8 byte-order mark
      {"# caf\xc3\xa9 \x01\xff\na\n", "a/1"},  // any byte is fine inside a comment
  });
}

TEST(Hostfile, ParsesSlotKeysAndTheirLegacySpellings) {
  expect_all({
      {"a slots=4", "a/4!"},
      {"a slots=2147483647", "a/2147483647!"},
      {"a slots=04", "a/4!"},
      {"a cpu=2", "a/2!"},
      {"a count=3", "a/3!"},
      {"a SLOTS=2", "a/2!"},
      {"a slots = 4", "a/4!"},
      {"a slots= 4", "a/4!"},
      {"a slots =4", "a/4!"},
      {"a\tslots=4", "a/4!"},
      {"a slots=4 max_slots=8", "a/4!<8"},
      {"a max_slots=8 slots=4", "a/4!<8"},
      {"a slots=4 max_slots=4", "a/4!<4"},
      {"a slots=2 max-slots=4", "a/2!<4"},
      {"a slots=2 slots_max=4", "a/2!<4"},
      {"a slots=2 slots-max=4", "a/2!<4"},
      {"a slots=2 cpu_max=4", "a/2!<4"},
      {"a slots=2 max_count=4", "a/2!<4"},
      {"a max_slots=8", "a/8!<8"},  // PRRTE: a maximum alone is the count too
  });
}

TEST(Hostfile, RepeatedHostAddsSlotsAndMakesThemGiven) {
  expect_all({
      {"a\na\n", "a/2!"},
      {"a\na\na\na\n", "a/4!"},
      {"a slots=4\na slots=2\n", "a/6!"},
      {"a\na slots=3\n", "a/4!"},
      {"a\nb\na\n", "a/2! b/1"},  // first-appearance order
      {"a slots=2 max_slots=8\na slots=2\n", "a/4!<8"},
  });
}

TEST(Hostfile, BareNameHasOneSlotNotGiven) {
  auto r = parse_hostfile("a\n", "hosts");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->nodes.size(), 1u);
  EXPECT_EQ(r->nodes[0].slots, 1);
  EXPECT_FALSE(r->nodes[0].slots_given);
  EXPECT_EQ(r->nodes[0].slots_max, 0);
}

TEST(Hostfile, ParsesUsers) {
  expect_all({
      {"alice@a", "a/1@alice"},
      {"a username=alice", "a/1@alice"},
      {"a user_name=alice", "a/1@alice"},
      {"a user-name=alice", "a/1@alice"},
      {"alice@a username=alice", "a/1@alice"},
      {"alice@a\na\n", "a/2!@alice"},
      {"a\nalice@a\n", "a/2!@alice"},
      {"al.ice_1-x@a", "a/1@al.ice_1-x"},
      {"alice@n[1-2] slots=2", "n1/2!@alice n2/2!@alice"},
  });
}

TEST(Hostfile, CollectsExclusions) {
  expect_all({
      {"^a", "^a"},
      {"a\n^a\n", "a/1 ^a"},  // returned beside the nodes, not subtracted
      {"^alice@a", "^a"},
      {"^n[1-3]", "^n1 ^n2 ^n3"},
      {"^a\n^a\n", "^a"},
      {"^a # gone\nb\n", "b/1 ^a"},
  });
}

TEST(Hostfile, ExpandsHostlistExpressions) {
  expect_all({
      {"n[1-3] slots=2", "n1/2! n2/2! n3/2!"},
      {"n[01-02]", "n01/1 n02/1"},
      {"a,b slots=2", "a/2! b/2!"},
      {"n[1-2]\nn1\n", "n1/2! n2/1"},
  });
}

TEST(Hostfile, AcceptsAddressesAndDomainNames) {
  expect_all({
      {"10.0.0.1 slots=2", "10.0.0.1/2!"},
      {"fe80::1 slots=2", "fe80::1/2!"},
      {"[fe80::1]", "fe80::1/1"},
      {"alice@fe80::1", "fe80::1/1@alice"},
      {"node1.example.org", "node1.example.org/1"},
      {"15", "15/1"},
  });
}

struct Bad {
  std::string text;
  int line;
  std::string says;
};

void expect_errors(const std::vector<Bad>& cases) {
  for (const Bad& c : cases) {
    auto r = parse_hostfile(c.text, "/etc/hosts.berth");
    ASSERT_FALSE(r.ok()) << testing::PrintToString(c.text) << " -> " << render(*r);
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    const std::string prefix = "/etc/hosts.berth:" + std::to_string(c.line) + ": ";
    EXPECT_EQ(r.error().message().rfind(prefix, 0), 0u)
        << testing::PrintToString(c.text) << ": " << r.error().message();
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << testing::PrintToString(c.text) << ": " << r.error().message();
  }
}

TEST(Hostfile, RefusesBadSlotCounts) {
  expect_errors({
      {"a slots=0", 1, "expected a whole number from 1 to 2147483647"},
      {"a slots=-1", 1, "expected a whole number"},
      {"a slots=+1", 1, "expected a whole number"},
      {"a slots=x", 1, "expected a whole number"},
      {"a slots=4x", 1, "expected a whole number"},
      {"a slots=2147483648", 1, "expected a whole number"},
      {"a slots=99999999999999999999999", 1, "expected a whole number"},
      {"a slots=", 1, "slots= needs a value"},
      {"a max_slots=0", 1, "expected a whole number"},
      {"a slots=2 slots=3", 1, "repeats this line's slot count"},
      {"a slots=2 cpu=3", 1, "repeats this line's slot count"},
      {"a max_slots=2 max-slots=3", 1, "repeats this line's max_slots"},
      {"a slots=2147483647\na\n", 2, "adds up to more than 2147483647"},
  });
}

TEST(Hostfile, RefusesMaxSlotsBelowSlots) {
  expect_errors({
      {"a slots=4 max_slots=2", 1, "max_slots=2 is less than slots=4"},
      {"a max_slots=2 slots=4", 1, "max_slots=2 is less than slots=4"},
      {"a slots=4 max_slots=4\na\n", 2, "now has 5 slots in all, more than its max_slots=4"},
      {"a max_slots=4\na max_slots=8\n", 2, "max_slots=8 here but max_slots=4"},
      {"a slots=2 max_slots=8\na max_slots=8\n", 2, "now has 10 slots"},
  });
}

TEST(Hostfile, RefusesUnknownKeysAndStrayWords) {
  expect_errors({
      {"a port=22", 1, "unknown key 'port'"},
      {"a foo=1", 1, "unknown key 'foo'"},
      {"a b", 1, "'b' after the host is not key=value"},
      {"a b c", 1, "'b' after the host is not key=value"},
      {"a slots", 1, "'slots' after the host is not key=value"},
      {"a =4", 1, "'=' without a key"},
      {"a slots=4=5", 1, "'=' without a key"},
      {"slots=4", 1, "a line starts with a host"},
      {"a=b", 1, "a line starts with a host"},
      {"rank 0=a slot=1", 1, "rankfile syntax"},
      {"a\nb\nc d\n", 3, "'d' after the host"},
  });
}

TEST(Hostfile, RefusesBadExclusionsAndRelativeSyntax) {
  expect_errors({
      {"^", 1, "'^' needs a host"},
      {"^ a", 1, "'^' needs a host"},
      {"^a slots=2", 1, "takes no key=value settings"},
      {"+n1", 1, "relative node syntax"},
      {"+e", 1, "relative node syntax"},
      {"+e:2", 1, "relative node syntax"},
      {"^+n1", 1, "relative node syntax"},
      {"^^a", 1, "character '^'"},
  });
}

TEST(Hostfile, RefusesBadUsers) {
  expect_errors({
      {"a@b@c", 1, "more than one '@'"},
      {"u@@a", 1, "more than one '@'"},
      {"@a", 1, "nothing before '@'"},
      {"u@", 1, "nothing after '@'"},
      {"u@^a", 1, "'^' leads the whole entry"},
      {"-u@a", 1, "a user name cannot start with '-'"},
      {"u$@a", 1, "'$' is not allowed in a user name"},
      {"a username=al/ice", 1, "'/' is not allowed in a user name"},
      {"alice@a username=bob", 1, "disagrees with username=bob"},
      {"a username=x username=y", 1, "repeats this line's user"},
      {"alice@a\nbob@a\n", 2, "user 'bob' here but 'alice'"},
  });
}

TEST(Hostfile, RefusesBadHostNamesAndBytes) {
  expect_errors({
      {std::string("a\0b\n", 4), 1, "NUL byte"},
      {std::string("a\n# x\0\n", 7), 2, "NUL byte"},
      {std::string("a\nb\0", 4), 2, "NUL byte"},  // no newline at the end
      {"caf\xc3\xa9\n", 1, "byte '\\xc3'"},
      {"a\x01\n", 1, "byte '\\x01'"},
      {"\xff\n", 1, "byte '\\xff'"},
      {"-a", 1, "cannot start with '-'"},
      {".a", 1, "cannot start with '.'"},
      {"a/b", 1, "character '/'"},
      {"a:b", 1, "not an IPv6 address"},
      {"fe80::1%eth0", 1, "not an IPv6 address"},
      {std::string(256, 'a'), 1, "longer than 255"},
      {"a\r\nb c\r\n", 2, "'c' after the host"},
      {"a\nb slots=0", 2, "expected a whole number"},
  });
}

TEST(Hostfile, RefusesBadHostlistExpressions) {
  expect_errors({
      {"n[1-", 1, "never closed"},
      {"[fe80::1", 1, "expected a digit"},
      {"n[3-1]", 1, "reversed range"},
      {"a,", 1, "empty item"},
      {"n[1-2]x/", 1, "'n[1-2]x/' expands to 'n1x/'"},
      {"n[1-1000001]", 1, "position 2: expands to more than 1000000 names"},
  });
}

// The bound is a parameter here (10^6 in use) so that these cases stay cheap.
TEST(Hostfile, BoundsExpansionsAcrossTheWholeFile) {
  EXPECT_TRUE(internal::parse_hostfile("n[1-5]\n^m[1-5]\na\nb\n", "hf", 10).ok());
  for (std::string text : {"n[1-6]\nm[1-6]\n", "^n[1-6]\n^m[1-6]\n", "n[1-6]\n^n[1-6]\n"}) {
    auto r = internal::parse_hostfile(text, "hf", 10);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message().rfind("hf:2: ", 0), 0u) << r.error().message();
    EXPECT_NE(r.error().message().find("name more than 10 hosts in all"), std::string::npos)
        << r.error().message();
  }
}

TEST(Hostfile, BoundsDistinctHosts) {
  // Plain names are not expansions, but a file of 32M distinct ones must still stop.
  EXPECT_TRUE(internal::parse_hostfile("a\nb\nc\na\na\n", "hf", 3).ok());
  auto r = internal::parse_hostfile("a\nb\nc\nd\n", "hf", 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "hf:4: more than 3 distinct hosts");
}

}  // namespace
}  // namespace berth::alloc
