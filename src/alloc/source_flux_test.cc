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

// An R document whose execution object is {R_LITE, NODELIST}.
std::string doc(const std::string& r_lite, const std::string& nodelist) {
  return R"({"version":1,"execution":{"R_lite":)" + r_lite + R"(,"nodelist":)" + nodelist +
         R"(,"starttime":1700000000.5,"expiration":1700003600}})";
}

const char kExample[] =
    R"({"version":1,"execution":{"R_lite":[{"rank":"0-3","children":{"core":"0-3","gpu":"0"}}],)"
    R"("nodelist":["node[1-4]"],"starttime":0,"expiration":0}})";

TEST(FluxR, RanksGetTheirCores) {
  auto r = parse_flux_r(kExample, "--flux-r r.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(summary(*r), "node1:4 node2:4 node3:4 node4:4");
  EXPECT_TRUE(all_slots_given(*r));
}

TEST(FluxR, Grammar) {
  const Case cases[] = {
      {"entries with different cores",
       doc(R"([{"rank":"0","children":{"core":"0-7"}},{"rank":"1-2","children":{"core":"0,2"}}])",
           R"(["a,b,c"])"),
       "a:8 b:2 c:2"},
      {"nodelist entries concatenate",
       doc(R"([{"rank":"0-3","children":{"core":"0"}}])", R"(["x[1-2]","y","z"])"),
       "x1:1 x2:1 y:1 z:1"},
      {"ranks need not start at 0 or be contiguous",
       doc(R"([{"rank":"3,7","children":{"core":"0-1"}}])", R"(["n3","n7"])"), "n3:2 n7:2"},
      {"names follow ascending rank, not R_lite order",
       doc(R"([{"rank":"5","children":{"core":"0"}},{"rank":"1","children":{"core":"0-2"}}])",
           R"(["low","high"])"),
       "low:3 high:1"},
      {"ranks within an idset in any order",
       doc(R"([{"rank":"2,0-1","children":{"core":"0"}}])", R"(["a","b","c"])"), "a:1 b:1 c:1"},
      {"bracketed idsets", doc(R"([{"rank":"[0-1]","children":{"core":"[0-3]"}}])", R"(["a","b"])"),
       "a:4 b:4"},
      {"two ranks on one host sum",
       doc(R"([{"rank":"0-2","children":{"core":"0-1"}}])", R"(["h,h,g"])"), "h:4 g:2"},
      {"gpus and other children add no slots",
       doc(R"([{"rank":"0","children":{"core":"0","gpu":"0-7","foo":"1"}}])", R"(["a"])"), "a:1"},
      {"unknown keys ignored",
       R"({"version":1,"scheduling":{"x":1},"execution":{"R_lite":[{"rank":"0",)"
       R"("children":{"core":"0"},"extra":true}],"nodelist":["a"],"properties":{"p":"0"}}})",
       "a:1"},
      {"starttime and expiration optional",
       R"({"version":1,"execution":{"R_lite":[{"rank":"0","children":{"core":"0"}}],)"
       R"("nodelist":["a"]}})",
       "a:1"},
      {"whitespace and crlf",
       "{\r\n  \"version\": 1,\r\n  \"execution\": {\"R_lite\": [{"
       "\"rank\": \"0\", \"children\": {\"core\": \"0-1\"}}],\r\n"
       "  \"nodelist\": [\"a\"]}\r\n}\r\n",
       "a:2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_flux_r(c.text, "R");
    EXPECT_EQ(outcome(r), c.want);
    if (r.ok()) {
      EXPECT_TRUE(all_slots_given(*r));
    }
  }
}

TEST(FluxR, RejectsMalformedDocuments) {
  const std::string one = R"([{"rank":"0","children":{"core":"0"}}])";
  const Case cases[] = {
      {"empty", "",
       "error: R:1: not valid JSON: syntax error while parsing value - unexpected end of "
       "input; expected '[', '{', or a literal"},
      {"not json on line 3", "{\n\"version\": 1,\n  oops\n}",
       "error: R:3: not valid JSON: syntax error while parsing object key - invalid literal; "
       "last read: '1,<U+000A>  o'; expected string literal"},
      {"trailing garbage", doc(one, R"(["a"])") + "x",
       "error: R:1: not valid JSON: syntax error while parsing value - invalid literal; last "
       "read: '1700003600}}x'; expected end of input"},
      {"invalid utf-8 in a string", "{\"version\":1,\"x\":\"\xff\"}",
       "error: R:1: not valid JSON: syntax error while parsing value - invalid string: "
       "ill-formed UTF-8 byte; last read: '\"\\xff'"},
      {"top level array", "[1]", "error: R: expected a JSON object, found array"},
      {"missing version", R"({"execution":{}})", "error: R: version: missing"},
      {"version as a string", R"({"version":"1"})",
       "error: R: version: expected an integer, found string"},
      {"version 1.0", R"({"version":1.0})", "error: R: version: expected an integer, found number"},
      {"version 2", R"({"version":2,"execution":{}})",
       "error: R: version: is 2; only version 1 is understood"},
      {"missing execution", R"({"version":1})", "error: R: execution: missing"},
      {"execution not an object", R"({"version":1,"execution":[]})",
       "error: R: execution: expected an object, found array"},
      {"missing R_lite", R"({"version":1,"execution":{"nodelist":[]}})",
       "error: R: execution.R_lite: missing"},
      {"R_lite not an array", R"({"version":1,"execution":{"R_lite":{},"nodelist":[]}})",
       "error: R: execution.R_lite: expected an array, found object"},
      {"missing nodelist", R"({"version":1,"execution":{"R_lite":[]}})",
       "error: R: execution.nodelist: missing"},
      {"nodelist a string", R"({"version":1,"execution":{"R_lite":[],"nodelist":"a"}})",
       "error: R: execution.nodelist: expected an array, found string"},
      {"empty R_lite", doc("[]", "[]"), "error: R: execution.R_lite: no ranks"},
      {"entry not an object", doc("[1]", R"(["a"])"),
       "error: R: execution.R_lite[0]: expected an object, found number"},
      {"missing rank", doc(R"([{"children":{"core":"0"}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].rank: missing"},
      {"rank as a number", doc(R"([{"rank":0,"children":{"core":"0"}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].rank: expected a string, found number"},
      {"bad rank idset", doc(R"([{"rank":"0-","children":{"core":"0"}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].rank: position 3: expected a digit, found the end"},
      {"empty rank idset", doc(R"([{"rank":"","children":{"core":"0"}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].rank: no ranks"},
      {"missing children", doc(R"([{"rank":"0"}])", R"(["a"])"),
       "error: R: execution.R_lite[0].children: missing"},
      {"children not an object", doc(R"([{"rank":"0","children":"core"}])", R"(["a"])"),
       "error: R: execution.R_lite[0].children: expected an object, found string"},
      {"missing core", doc(R"([{"rank":"0","children":{"gpu":"0"}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].children.core: missing"},
      {"core as an array", doc(R"([{"rank":"0","children":{"core":[0]}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].children.core: expected a string, found array"},
      {"bad core idset", doc(R"([{"rank":"0","children":{"core":"3-1"}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].children.core: position 1: reversed range 3-1"},
      {"no cores", doc(R"([{"rank":"0","children":{"core":""}}])", R"(["a"])"),
       "error: R: execution.R_lite[0].children.core: no cores"},
      {"rank in two entries",
       doc(R"([{"rank":"0-2","children":{"core":"0"}},{"rank":"2-3","children":{"core":"1"}}])",
           R"(["a,b,c,d"])"),
       "error: R: execution.R_lite[1].rank: rank 2 is also in execution.R_lite[0]"},
      {"too many ranks", doc(R"([{"rank":"0-1000000","children":{"core":"0"}}])", R"(["a"])"),
       "error: R: execution.R_lite: more than 1000000 ranks"},
      {"fewer names than ranks", doc(R"([{"rank":"0-2","children":{"core":"0"}}])", R"(["a,b"])"),
       "error: R: execution.nodelist: names 2 host(s) but execution.R_lite has 3 rank(s)"},
      {"more names than ranks", doc(one, R"(["a,b","c[1-100]"])"),
       "error: R: execution.nodelist: names at least 2 host(s) but execution.R_lite has 1 "
       "rank(s)"},
      {"nodelist entry not a string", doc(one, R"([["a"]])"),
       "error: R: execution.nodelist[0]: expected a string, found array"},
      {"bad hostlist", doc(one, R"(["a[1-"])"),
       "error: R: execution.nodelist[0]: "},  // hostlist's own message follows; see below
      {"bad host name", doc(one, R"(["-a"])"),
       "error: R: execution.nodelist[0]: '-a' is not a host name: it starts with '-'"},
      {"host name hostlist accepts but a host cannot have", doc(one, R"(["a/b"])"),
       "error: R: execution.nodelist[0]: 'a/b' is not a host name: '/' at byte 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = parse_flux_r(c.text, "R");
    if (std::string(c.label) == "bad hostlist") {
      // The hostlist parser words its own errors; only the prefix is this parser's.
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(outcome(r).rfind(c.want, 0), 0u) << outcome(r);
      continue;
    }
    EXPECT_EQ(outcome(r), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

TEST(DiscoverFlux, NotMineWithoutR) {
  Inputs in;
  in.env.set("FLUX_JOB_ID", "f2Gx");  // inside a Flux job, but no R handed over
  auto r = discover_flux(in.input());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(DiscoverFlux, ReadsFileFromFlag) {
  ScratchDir dir;
  Inputs in;
  in.options.flux_r = dir.write("r.json", kExample);
  // FLUX_JOB_ID is F58 with its UTF-8 prefix U+0192.
  in.env.set("FLUX_JOB_ID",
             "\xc6\x92"
             "D7j8aT");
  auto r = discover_flux(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "node1:4 node2:4 node3:4 node4:4");
  EXPECT_EQ((*r)->job_id,
            "\xc6\x92"
            "D7j8aT");
}

TEST(DiscoverFlux, ReadsFileFromEnvironment) {
  ScratchDir dir;
  Inputs in;
  in.env.set("BERTH_FLUX_R", dir.write("r.json", kExample));
  auto r = discover_flux(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "node1:4 node2:4 node3:4 node4:4");
  EXPECT_EQ((*r)->job_id, "");
}

TEST(DiscoverFlux, FlagWinsOverEnvironment) {
  ScratchDir dir;
  Inputs in;
  in.options.flux_r =
      dir.write("flag.json", doc(R"([{"rank":"0","children":{"core":"0"}}])", R"(["fromflag"])"));
  in.env.set("BERTH_FLUX_R", dir.path() + "/does-not-exist");
  auto r = discover_flux(in.input());
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(summary((*r)->nodes()), "fromflag:1");
}

TEST(DiscoverFlux, Errors) {
  ScratchDir dir;
  std::string good = dir.write("good.json", kExample);
  std::string bad = dir.write("bad.json", R"({"version":2})");
  std::string missing = dir.path() + "/missing.json";
  struct ErrCase {
    const char* label;
    const char* flag;  // nullptr: no --flux-r
    const char* env;   // nullptr: BERTH_FLUX_R unset
    const char* job_id;
    Errc code;
    std::string message;
  };
  const ErrCase cases[] = {
      {"empty flag", "", nullptr, nullptr, Errc::kInvalidInput, "--flux-r: empty path"},
      {"empty variable", nullptr, "", nullptr, Errc::kInvalidInput,
       "BERTH_FLUX_R: is set but empty"},
      {"missing file from flag", missing.c_str(), nullptr, nullptr, Errc::kNotFound,
       "--flux-r " + missing + ": cannot open: No such file or directory"},
      {"missing file from variable", nullptr, missing.c_str(), nullptr, Errc::kNotFound,
       "BERTH_FLUX_R " + missing + ": cannot open: No such file or directory"},
      {"bad document", nullptr, bad.c_str(), nullptr, Errc::kInvalidInput,
       "BERTH_FLUX_R " + bad + ": version: is 2; only version 1 is understood"},
      {"malformed utf-8 job id", good.c_str(), nullptr, "\xc6", Errc::kInvalidInput,
       "FLUX_JOB_ID: '\\xc6' is not a job id: malformed UTF-8 at byte 1"},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.label);
    Inputs in;
    if (c.flag) in.options.flux_r = c.flag;
    if (c.env) in.env.set("BERTH_FLUX_R", c.env);
    if (c.job_id) in.env.set("FLUX_JOB_ID", c.job_id);
    auto r = discover_flux(in.input());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), c.code);
    EXPECT_EQ(r.error().message(), c.message);
  }
}

}  // namespace
}  // namespace berth::alloc
