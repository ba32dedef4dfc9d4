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

TEST(PbsNodefile, RepeatsAddSlots) {
  auto r = parse_pbs_nodefile("n1\nn1\nn2\nn1\n", "PBS_NODEFILE f");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(summary(*r), "n1:3 n2:1");
  EXPECT_TRUE(all_slots_given(*r));
}

TEST(PbsNodefile, Grammar) {
  const Case cases[] = {
      {"one host", "n1\n", "n1:1"},
      {"no trailing newline", "n1\nn2", "n1:1 n2:1"},
      {"first-seen order", "b\na\nb\n", "b:2 a:1"},
      {"blank lines", "\n\nn1\n\n  \n\t\nn1\n\n", "n1:2"},
      {"crlf", "n1\r\nn2\r\nn1\r\n", "n1:2 n2:1"},
      {"crlf without final newline", "n1\r\nn2\r", "n1:1 n2:1"},
      {"surrounding blanks", "  n1 \t\n\tn2  \n", "n1:1 n2:1"},
      {"fqdn kept as written", "n1.cluster.example.org\nn1\n", "n1.cluster.example.org:1 n1:1"},
      {"ipv4", "10.0.0.1\n10.0.0.1\n", "10.0.0.1:2"},
      {"ipv6", "::1\nfe80::1\n", "::1:1 fe80::1:1"},
      {"underscore and digits first", "0node_a\n", "0node_a:1"},
      {"names are case sensitive", "N1\nn1\n", "N1:1 n1:1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_pbs_nodefile(c.text, "PBS_NODEFILE f");
    EXPECT_EQ(outcome(r), c.want);
    if (r.ok()) {
      EXPECT_TRUE(all_slots_given(*r));
    }
  }
}

TEST(PbsNodefile, RejectsMalformedInput) {
  const std::string long_name(256, 'a');
  const Case cases[] = {
      {"empty file", "", "error: PBS_NODEFILE f: no host names in the file"},
      {"only blanks", " \n\t\r\n\n", "error: PBS_NODEFILE f: no host names in the file"},
      {"two names on a line", "n1\nn2 n3\n",
       "error: PBS_NODEFILE f:2: expected one host name, found 2 fields ('n2 n3')"},
      {"nul byte", std::string("n1\nn\0x\n", 6),
       "error: PBS_NODEFILE f:2: 'n\\x00x' is not a host name: a control character at byte 2"},
      {"high-bit byte", "n1\n\xc3\xa9t\xc3\xa9\n",
       "error: PBS_NODEFILE f:2: '\\xc3\\xa9t\\xc3\\xa9' is not a host name: a non-ASCII byte "
       "at byte 1"},
      {"lone cr inside a name", "a\rb\n",
       "error: PBS_NODEFILE f:1: expected one host name, found 2 fields ('a\\x0db')"},
      {"escape char", "n\x1b[1m\n",
       "error: PBS_NODEFILE f:1: 'n\\x1b[1m' is not a host name: a control character at byte "
       "2"},
      {"leading dash", "-oProxyCommand=x\n",
       "error: PBS_NODEFILE f:1: '-oProxyCommand=x' is not a host name: '=' at byte 15"},
      {"leading dash only", "-n1\n",
       "error: PBS_NODEFILE f:1: '-n1' is not a host name: it starts with '-'"},
      {"leading dot", ".n1\n",
       "error: PBS_NODEFILE f:1: '.n1' is not a host name: it starts "
       "with '.'"},
      {"hostlist syntax", "n[1-2]\n",
       "error: PBS_NODEFILE f:1: 'n[1-2]' is not a host name: '[' at byte 2"},
      {"comma", "a,b\n", "error: PBS_NODEFILE f:1: 'a,b' is not a host name: ',' at byte 2"},
      {"user at host", "me@n1\n",
       "error: PBS_NODEFILE f:1: 'me@n1' is not a host name: '@' at byte 3"},
      {"too long", long_name + "\n",
       "error: PBS_NODEFILE f:1: host name '" + long_name.substr(0, 64) +
           "...' is 256 bytes long; the limit is 255"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_pbs_nodefile(c.text, "PBS_NODEFILE f");
    EXPECT_EQ(outcome(r), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

TEST(PbsNodefile, AcceptsLongestName) {
  const std::string name(255, 'a');
  EXPECT_EQ(outcome(parse_pbs_nodefile(name + "\n", "f")), name + ":1");
}

TEST(DiscoverPbs, NotMineWithoutNodefile) {
  Inputs in;
  auto r = discover_pbs(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverPbs, NotMineWithOnlyJobId) {
  Inputs in;
  in.env.set("PBS_JOBID", "12.server");
  auto r = discover_pbs(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverPbs, ReadsNodefileAndJobId) {
  ScratchDir dir;
  Inputs in;
  in.env.set("PBS_NODEFILE", dir.write("nodes", "n1\r\nn2\r\nn1\r\n"));
  in.env.set("PBS_JOBID", "1234.pbs-server");
  auto r = discover_pbs(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "n1:2 n2:1");
  EXPECT_TRUE(all_slots_given((*r)->nodes()));
  EXPECT_EQ((*r)->job_id, "1234.pbs-server");
}

TEST(DiscoverPbs, JobIdIsOptional) {
  ScratchDir dir;
  Inputs in;
  in.env.set("PBS_NODEFILE", dir.write("nodes", "n1\n"));
  auto r = discover_pbs(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->job_id, "");
}

TEST(DiscoverPbs, Errors) {
  ScratchDir dir;
  std::string good = dir.write("good", "n1\n");
  std::string bad = dir.write("bad", "n1\nn2 n3\n");
  std::string missing = dir.path() + "/missing";
  struct ErrCase {
    const char* label;
    std::string nodefile;
    const char* job_id;  // nullptr: unset
    Errc code;
    std::string message;
  };
  const ErrCase cases[] = {
      {"empty variable", "", nullptr, Errc::kInvalidInput, "PBS_NODEFILE: is set but empty"},
      {"missing file", missing, nullptr, Errc::kNotFound,
       "PBS_NODEFILE " + missing + ": cannot open: No such file or directory"},
      {"directory", dir.path(), nullptr, Errc::kIo,
       "PBS_NODEFILE " + dir.path() + ": is a directory"},
      {"bad line", bad, nullptr, Errc::kInvalidInput,
       "PBS_NODEFILE " + bad + ":2: expected one host name, found 2 fields ('n2 n3')"},
      {"empty job id", good, "", Errc::kInvalidInput, "PBS_JOBID: is set but empty"},
      {"job id with a newline", good, "12\nx", Errc::kInvalidInput,
       "PBS_JOBID: '12\\x0ax' is not a job id: a control character at byte 3"},
      {"path with a newline", dir.path() + "/a\nb", nullptr, Errc::kNotFound,
       "PBS_NODEFILE " + dir.path() + "/a\\x0ab: cannot open: No such file or directory"},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.label);
    Inputs in;
    in.env.set("PBS_NODEFILE", c.nodefile);
    if (c.job_id) in.env.set("PBS_JOBID", c.job_id);
    auto r = discover_pbs(in.input());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), c.code);
    EXPECT_EQ(r.error().message(), c.message);
  }
}

TEST(DiscoverPbs, OversizedVariableIsError) {
  Inputs in;
  in.env.set("PBS_NODEFILE", std::string(Env::kMaxValueBytes + 1, 'x'));
  auto r = discover_pbs(in.input());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().rfind("PBS_NODEFILE: value is", 0), 0u) << r.error().message();
}

}  // namespace
}  // namespace berth::alloc
