#include "alloc/rm_input.h"

#include <gtest/gtest.h>

#include <string>

#include "alloc/rm_test_support.h"

namespace berth::alloc {
namespace {

using testing::ScratchDir;
using testing::summary;

TEST(HostName, AcceptsUsualNames) {
  for (const char* name : {"n1", "nid00001", "node-1.cluster.example.org", "a", "0", "n_1",
                           "10.1.2.3", "::1", "fe80::1", "host.", "A-Z"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(host_name_problem(name), std::nullopt);
  }
}

TEST(HostName, RejectsWhatCannotBeAHost) {
  struct Case {
    std::string name;
    const char* want;
  };
  const Case cases[] = {
      {"", "empty host name"},
      {"a b", "'a b' is not a host name: a space at byte 2"},
      {"a\tb", "'a\\x09b' is not a host name: a control character at byte 2"},
      {std::string("a\0", 2), "'a\\x00' is not a host name: a control character at byte 2"},
      {"a\x7f", "'a\\x7f' is not a host name: a control character at byte 2"},
      {"\xc3\xa9", "'\\xc3\\xa9' is not a host name: a non-ASCII byte at byte 1"},
      {"-x", "'-x' is not a host name: it starts with '-'"},
      {".x", "'.x' is not a host name: it starts with '.'"},
      {"_x", "'_x' is not a host name: it starts with '_'"},
      {"a/b", "'a/b' is not a host name: '/' at byte 2"},
      {"a;rm", "'a;rm' is not a host name: ';' at byte 2"},
      {"$(x)", "'$(x)' is not a host name: '$' at byte 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(host_name_problem(c.name).value_or("(accepted)"), c.want);
  }
}

TEST(JobId, AcceptsSchedulersIds) {
  for (const char* id : {"1234", "1234.pbs-server", "1234[5].server", "42.7",
                         "\xc6\x92"
                         "D7j8aT",
                         "f2Gx", "\xf0\x9f\x98\x80"}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(job_id_problem(id), std::nullopt);
  }
}

TEST(JobId, RejectsMalformedIds) {
  struct Case {
    std::string id;
    const char* want;
  };
  const Case cases[] = {
      {"", "empty job id"},
      {"1 2", "'1 2' is not a job id: a space at byte 2"},
      {"1\n", "'1\\x0a' is not a job id: a control character at byte 2"},
      {"\xc6", "'\\xc6' is not a job id: malformed UTF-8 at byte 1"},           // truncated
      {"\x80", "'\\x80' is not a job id: malformed UTF-8 at byte 1"},           // lone continuation
      {"\xc0\x80", "'\\xc0\\x80' is not a job id: malformed UTF-8 at byte 1"},  // overlong NUL
      {"a\xed\xa0\x80", "'a\\xed\\xa0\\x80' is not a job id: malformed UTF-8 at byte 2"},
      {"\xf4\x90\x80\x80", "'\\xf4\\x90\\x80\\x80' is not a job id: malformed UTF-8 at byte 1"},
      {"\xe0\x80\x80", "'\\xe0\\x80\\x80' is not a job id: malformed UTF-8 at byte 1"},
      {std::string(257, '1'), "job id is 257 bytes long; the limit is 256"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    EXPECT_EQ(job_id_problem(c.id).value_or("(accepted)"), c.want);
  }
}

TEST(SlotTally, KeepsFirstSeenOrderAndSums) {
  SlotTally t;
  EXPECT_TRUE(t.empty());
  ASSERT_TRUE(t.add("b", 2).ok());
  ASSERT_TRUE(t.add("a", 1).ok());
  ASSERT_TRUE(t.add("b", 3).ok());
  EXPECT_FALSE(t.empty());
  auto nodes = std::move(t).take();
  EXPECT_EQ(summary(nodes), "b:5 a:1");
  for (const NodeSpec& n : nodes) EXPECT_TRUE(n.slots_given);
}

TEST(SlotTally, RefusesSumsAboveTheBound) {
  SlotTally t;
  ASSERT_TRUE(t.add("a", kMaxNodeSlots).ok());
  auto r = t.add("a", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "host 'a' would have more than 2147483647 slots");
  // A refused add changes nothing.
  EXPECT_EQ(summary(std::move(t).take()), "a:2147483647");
}

TEST(HostPerLine, ErrorsNameOriginAndLine) {
  auto r = parse_host_per_line("a\n\nb c\n", "X f");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "X f:3: expected one host name, found 2 fields ('b c')");
}

TEST(RequiredValue, DistinguishesUnsetEmptyAndSet) {
  Env env;
  auto unset = get_required_value(env, "V");
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->has_value());
  env.set("V", "");
  auto empty = get_required_value(env, "V");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message(), "V: is set but empty");
  env.set("V", "x");
  auto set = get_required_value(env, "V");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->value_or(""), "x");
}

TEST(JobIdVariable, UnsetIsEmptyAndBadIsAnError) {
  Env env;
  auto unset = get_job_id(env, "J");
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(*unset, "");
  env.set("J", "1\x01");
  auto bad = get_job_id(env, "J");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "J: '1\\x01' is not a job id: a control character at byte 2");
}

TEST(NamedFile, ReadsAndNamesTheVariable) {
  ScratchDir dir;
  std::string p = dir.write("f", "text");
  auto ok = read_named_file("V", p);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "text");
  auto missing = read_named_file("V", dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Errc::kNotFound);
  EXPECT_EQ(missing.error().message(),
            "V " + dir.path() + "/nope: cannot open: No such file or directory");
  EXPECT_EQ(file_origin("V", "a\nb"), "V a\\x0ab");
}

}  // namespace
}  // namespace berth::alloc
