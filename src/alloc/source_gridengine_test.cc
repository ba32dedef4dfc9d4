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

TEST(PeHostfile, RepeatedHostsSum) {
  auto r = parse_pe_hostfile(
      "n1 2 all.q@n1 UNDEFINED\nn2 4 all.q@n2 UNDEFINED\n"
      "n1 1 long.q@n1 UNDEFINED\n",
      "PE_HOSTFILE f");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(summary(*r), "n1:3 n2:4");
  EXPECT_TRUE(all_slots_given(*r));
}

TEST(PeHostfile, Grammar) {
  const Case cases[] = {
      {"as Grid Engine writes it", "node1 2 all.q@node1 UNDEFINED\n", "node1:2"},
      {"processor range", "node1 4 all.q@node1 0,1:2-3\n", "node1:4"},
      {"null processors", "node1 1 all.q@node1 <NULL>\n", "node1:1"},
      {"queue and processors are optional", "node1 2\nnode2 3 all.q@node2\n", "node1:2 node2:3"},
      {"tabs and runs of blanks", "node1\t2 \t all.q@node1\t\tUNDEFINED\n", "node1:2"},
      {"crlf", "node1 2 q UNDEFINED\r\nnode2 1 q UNDEFINED\r\n", "node1:2 node2:1"},
      {"blank lines and no final newline", "\n  \nnode1 2 q x\n\nnode2 1", "node1:2 node2:1"},
      {"first-seen order", "b 1\na 1\nb 1\n", "b:2 a:1"},
      {"fqdn", "node1.example.org 8 all.q@node1.example.org UNDEFINED\n", "node1.example.org:8"},
      {"largest count", "n 2147483647\n", "n:2147483647"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_pe_hostfile(c.text, "PE_HOSTFILE f");
    EXPECT_EQ(outcome(r), c.want);
    if (r.ok()) {
      EXPECT_TRUE(all_slots_given(*r));
    }
  }
}

TEST(PeHostfile, RejectsMalformedInput) {
  const Case cases[] = {
      {"empty file", "", "error: PE_HOSTFILE f: no hosts in the file"},
      {"only blanks", "\n \r\n\t\n", "error: PE_HOSTFILE f: no hosts in the file"},
      {"host only", "n1 2\nn2\n",
       "error: PE_HOSTFILE f:2: expected 'host slots [queue [processors]]', found 1 field(s) "
       "in 'n2'"},
      {"five fields", "n1 2 q p extra\n",
       "error: PE_HOSTFILE f:1: expected 'host slots [queue [processors]]', found 5 field(s) "
       "in 'n1 2 q p extra'"},
      {"non-numeric slots", "n1 two q p\n",
       "error: PE_HOSTFILE f:1: slot count for 'n1': expected a number, found 't' at "
       "position 1"},
      {"negative slots", "n1 -2 q p\n",
       "error: PE_HOSTFILE f:1: slot count for 'n1': expected a number, found '-' at "
       "position 1"},
      {"zero slots", "n1 0 q p\n", "error: PE_HOSTFILE f:1: host 'n1' has 0 slots"},
      {"slots above 2^31-1", "n1 2147483648\n",
       "error: PE_HOSTFILE f:1: slot count for 'n1': number '2147483648' is larger than "
       "2147483647"},
      {"sum above 2^31-1", "n1 2147483647 a.q\nn1 1 b.q\n",
       "error: PE_HOSTFILE f:2: host 'n1' would have more than 2147483647 slots"},
      {"bad host",
       "n1 1\nn\xe2\x80\x8b"
       "2 1\n",
       "error: PE_HOSTFILE f:2: 'n\\xe2\\x80\\x8b2' is not a host name: a non-ASCII byte at "
       "byte 2"},
      {"nul in host", std::string("n\0 1\n", 5),
       "error: PE_HOSTFILE f:1: 'n\\x00' is not a host name: a control character at byte 2"},
      {"leading dash", "-n 1\n",
       "error: PE_HOSTFILE f:1: '-n' is not a host name: it starts "
       "with '-'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_pe_hostfile(c.text, "PE_HOSTFILE f");
    EXPECT_EQ(outcome(r), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

TEST(DiscoverGridEngine, NotMineWithoutPeHostfile) {
  Inputs in;
  auto r = discover_gridengine(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverGridEngine, SerialJobIsNotMine) {
  // Grid Engine sets JOB_ID in every job but PE_HOSTFILE only in parallel ones.
  Inputs in;
  in.env.set("JOB_ID", "42");
  auto r = discover_gridengine(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverGridEngine, ReadsPeHostfile) {
  ScratchDir dir;
  Inputs in;
  in.env.set("PE_HOSTFILE", dir.write("pe", "n1 2 all.q@n1 UNDEFINED\nn2 1 all.q@n2 UNDEFINED\n"));
  in.env.set("JOB_ID", "42");
  in.env.set("SGE_TASK_ID", "undefined");
  auto r = discover_gridengine(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "n1:2 n2:1");
  EXPECT_TRUE(all_slots_given((*r)->nodes()));
  EXPECT_EQ((*r)->job_id, "42");
}

TEST(DiscoverGridEngine, ArrayTaskJoinsJobId) {
  ScratchDir dir;
  Inputs in;
  in.env.set("PE_HOSTFILE", dir.write("pe", "n1 2\n"));
  in.env.set("JOB_ID", "42");
  in.env.set("SGE_TASK_ID", "7");
  auto r = discover_gridengine(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->job_id, "42.7");
}

TEST(DiscoverGridEngine, Errors) {
  ScratchDir dir;
  std::string good = dir.write("good", "n1 2\n");
  std::string bad = dir.write("bad", "n1 2\nn2 x\n");
  std::string missing = dir.path() + "/missing";
  struct ErrCase {
    const char* label;
    std::string pe_hostfile;
    const char* job_id;  // nullptr: unset
    Errc code;
    std::string message;
  };
  const ErrCase cases[] = {
      {"pe hostfile without job id", good, nullptr, Errc::kInvalidInput,
       "PE_HOSTFILE is set but JOB_ID is not: not a complete Grid Engine job environment"},
      {"empty pe hostfile variable", "", "42", Errc::kInvalidInput,
       "PE_HOSTFILE: is set but empty"},
      {"empty job id", good, "", Errc::kInvalidInput, "JOB_ID: is set but empty"},
      {"job id with a tab", good, "4\t2", Errc::kInvalidInput,
       "JOB_ID: '4\\x092' is not a job id: a control character at byte 2"},
      {"missing file", missing, "42", Errc::kNotFound,
       "PE_HOSTFILE " + missing + ": cannot open: No such file or directory"},
      {"bad line", bad, "42", Errc::kInvalidInput,
       "PE_HOSTFILE " + bad +
           ":2: slot count for 'n2': expected a number, found 'x' at "
           "position 1"},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.label);
    Inputs in;
    in.env.set("PE_HOSTFILE", c.pe_hostfile);
    if (c.job_id) in.env.set("JOB_ID", c.job_id);
    auto r = discover_gridengine(in.input());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), c.code);
    EXPECT_EQ(r.error().message(), c.message);
  }
}

}  // namespace
}  // namespace berth::alloc
