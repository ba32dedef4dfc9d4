#include <gtest/gtest.h>

#include <string>

#include "alloc/rm_test_support.h"
#include "alloc/source.h"

namespace berth::alloc {
namespace {

using testing::all_slots_given;
using testing::Inputs;
using testing::outcome;
using testing::ScratchDir;
using testing::summary;

struct Case {
  const char* label;
  std::string text;
  std::string want;  // summary(), or "error: " + message
};

TEST(LsfHostfile, EveryOccurrenceIsASlot) {
  const Case cases[] = {
      {"one line per slot", "h1\nh1\nh1\nh2\nh2\n", "h1:3 h2:2"},
      {"interleaved repeats keep first-seen order", "h2\nh1\nh2\n", "h2:2 h1:1"},
      {"crlf and blank lines", "h1\r\n\r\nh2\r\n", "h1:1 h2:1"},
      {"no trailing newline", "h1", "h1:1"},
      {"empty", "", "error: LSB_DJOB_HOSTFILE f: no host names in the file"},
      {"two fields", "h1 4\n",
       "error: LSB_DJOB_HOSTFILE f:1: expected one host name, found 2 fields ('h1 4')"},
      {"bad byte", "h1\nh\xff\n",
       "error: LSB_DJOB_HOSTFILE f:2: 'h\\xff' is not a host name: a non-ASCII byte at byte 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_lsf_hostfile(c.text, "LSB_DJOB_HOSTFILE f");
    EXPECT_EQ(outcome(r), c.want);
    if (r.ok()) {
      EXPECT_TRUE(all_slots_given(*r));
    }
  }
}

TEST(LsfMcpuHosts, Grammar) {
  const Case cases[] = {
      {"two hosts", "hostA 4 hostB 2", "hostA:4 hostB:2"},
      {"one host", "hostA 1", "hostA:1"},
      {"trailing blank, as LSF writes it", "hostA 4 hostB 2 ", "hostA:4 hostB:2"},
      {"any blanks", "\thostA   4\n hostB\t2\r\n", "hostA:4 hostB:2"},
      {"a host named twice sums", "a 1 b 2 a 3", "a:4 b:2"},
      {"leading zeros", "a 007", "a:7"},
      {"largest count", "a 2147483647", "a:2147483647"},
      {"fqdn", "a.b.c 2", "a.b.c:2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_lsf_mcpu_hosts(c.text, "LSB_MCPU_HOSTS");
    EXPECT_EQ(outcome(r), c.want);
    if (r.ok()) {
      EXPECT_TRUE(all_slots_given(*r));
    }
  }
}

TEST(LsfMcpuHosts, RejectsMalformedInput) {
  const Case cases[] = {
      {"empty", "", "error: LSB_MCPU_HOSTS: no hosts in ''"},
      {"only blanks", "  \t ", "error: LSB_MCPU_HOSTS: no hosts in '  \\x09 '"},
      {"host without count", "hostA",
       "error: LSB_MCPU_HOSTS: position 1: host 'hostA' has no slot count after it"},
      {"odd field count", "hostA 4 hostB",
       "error: LSB_MCPU_HOSTS: position 9: host 'hostB' has no slot count after it"},
      {"non-numeric count", "hostA four",
       "error: LSB_MCPU_HOSTS: position 7: slot count for 'hostA': expected a number, found "
       "'f' at position 1"},
      {"counts and hosts swapped", "4 hostA",
       "error: LSB_MCPU_HOSTS: position 3: slot count for '4': expected a number, found 'h' "
       "at position 1"},
      {"negative", "a -1",
       "error: LSB_MCPU_HOSTS: position 3: slot count for 'a': expected a number, found '-' "
       "at position 1"},
      {"plus sign", "a +1",
       "error: LSB_MCPU_HOSTS: position 3: slot count for 'a': expected a number, found '+' "
       "at position 1"},
      {"fraction", "a 1.5",
       "error: LSB_MCPU_HOSTS: position 3: slot count for 'a': expected a number, found '.' "
       "at position 2"},
      {"zero", "a 0", "error: LSB_MCPU_HOSTS: position 3: host 'a' has 0 slots"},
      {"above 2^31-1", "a 2147483648",
       "error: LSB_MCPU_HOSTS: position 3: slot count for 'a': number '2147483648' is larger "
       "than 2147483647"},
      {"huge", "a 99999999999999999999999",
       "error: LSB_MCPU_HOSTS: position 3: slot count for 'a': number "
       "'99999999999999999999999' is larger than 2147483647"},
      {"sum above 2^31-1", "a 2147483647 b 1 a 1",
       "error: LSB_MCPU_HOSTS: position 18: host 'a' would have more than 2147483647 slots"},
      {"bad host", "a 1 -b 2",
       "error: LSB_MCPU_HOSTS: position 5: '-b' is not a host name: "
       "it starts with '-'"},
      {"control byte in host", std::string("a\0b 1", 5),
       "error: LSB_MCPU_HOSTS: position 1: 'a\\x00b' is not a host name: a control character "
       "at byte 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_lsf_mcpu_hosts(c.text, "LSB_MCPU_HOSTS");
    EXPECT_EQ(outcome(r), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

TEST(DiscoverLsf, NotMineWithoutHostVariables) {
  Inputs in;
  auto r = discover_lsf(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverLsf, NotMineWithOnlyJobId) {
  Inputs in;
  in.env.set("LSB_JOBID", "4711");
  auto r = discover_lsf(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverLsf, ReadsMcpuHosts) {
  Inputs in;
  in.env.set("LSB_MCPU_HOSTS", "hostA 4 hostB 2 ");
  in.env.set("LSB_JOBID", "4711");
  auto r = discover_lsf(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "hostA:4 hostB:2");
  EXPECT_TRUE(all_slots_given((*r)->nodes()));
  EXPECT_EQ((*r)->job_id, "4711");
}

TEST(DiscoverLsf, HostfileWinsOverMcpuHosts) {
  ScratchDir dir;
  Inputs in;
  in.env.set("LSB_DJOB_HOSTFILE", dir.write("hosts", "h1\nh1\nh2\n"));
  in.env.set("LSB_MCPU_HOSTS", "other 9");
  auto r = discover_lsf(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "h1:2 h2:1");
  EXPECT_EQ((*r)->job_id, "");
}

TEST(DiscoverLsf, Errors) {
  ScratchDir dir;
  std::string missing = dir.path() + "/missing";
  std::string bad = dir.write("bad", "h1\n\nh 2\n");
  struct ErrCase {
    const char* label;
    const char* hostfile;  // nullptr: unset
    const char* mcpu;      // nullptr: unset
    const char* job_id;    // nullptr: unset
    Errc code;
    std::string message;
  };
  const ErrCase cases[] = {
      {"empty hostfile variable", "", "h 1", nullptr, Errc::kInvalidInput,
       "LSB_DJOB_HOSTFILE: is set but empty"},
      {"empty mcpu variable", nullptr, "", nullptr, Errc::kInvalidInput,
       "LSB_MCPU_HOSTS: is set but empty"},
      // No fallback to LSB_MCPU_HOSTS: a hostfile that is named but unreadable fails.
      {"missing hostfile", missing.c_str(), "h 1", nullptr, Errc::kNotFound,
       "LSB_DJOB_HOSTFILE " + missing + ": cannot open: No such file or directory"},
      {"bad hostfile", bad.c_str(), nullptr, nullptr, Errc::kInvalidInput,
       "LSB_DJOB_HOSTFILE " + bad + ":3: expected one host name, found 2 fields ('h 2')"},
      {"bad mcpu", nullptr, "h x", nullptr, Errc::kInvalidInput,
       "LSB_MCPU_HOSTS: position 3: slot count for 'h': expected a number, found 'x' at "
       "position 1"},
      {"bad job id", nullptr, "h 1", "47 11", Errc::kInvalidInput,
       "LSB_JOBID: '47 11' is not a job id: a space at byte 3"},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.label);
    Inputs in;
    if (c.hostfile) in.env.set("LSB_DJOB_HOSTFILE", c.hostfile);
    if (c.mcpu) in.env.set("LSB_MCPU_HOSTS", c.mcpu);
    if (c.job_id) in.env.set("LSB_JOBID", c.job_id);
    auto r = discover_lsf(in.input());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), c.code);
    EXPECT_EQ(r.error().message(), c.message);
  }
}

}  // namespace
}  // namespace berth::alloc
