#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "pipeline/executor.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::ordered_json;

// The steps as nlohmann builds and dumps them: what report_steps_json() must write,
// byte for byte.
std::string reference(const RunReport& r) {
  json steps = json::array();
  for (const auto& s : r.steps) {
    json o = json::object();
    for (const auto& [name, out] : s.outputs) o[name] = output_json(out);
    json st = json::object();
    st["name"] = s.name;
    st["state"] = step_state_name(s.state);
    st["key"] = s.key;
    st["reason"] = s.reason;
    st["node"] = s.node;
    st["cores"] = s.cores;
    st["computed_by"] = s.computed_by;
    st["start_s"] = s.start_s;
    st["end_s"] = s.end_s;
    st["exit_code"] = s.exit_code;
    st["outputs"] = std::move(o);
    if (!s.log.empty()) st["log"] = s.log;
    if (!s.log_tail.empty()) st["log_tail"] = s.log_tail;
    if (s.attempts > 1) st["attempts"] = s.attempts;
    if (s.timed_out) st["timed_out"] = true;
    if (!s.notices.empty()) st["notices"] = s.notices;
    if (!s.basis.empty()) st["basis"] = json::parse(s.basis);
    steps.push_back(std::move(st));
  }
  return steps.dump(-1, ' ', false, json::error_handler_t::replace);
}

TEST(ReportSteps, WrittenAsNlohmannWouldWriteThem) {
  RunReport r;
  EXPECT_EQ(report_steps_json(r), "[]");
  EXPECT_EQ(report_steps_json(r), reference(r));

  StepRecord plain;
  plain.name = "w-1";
  plain.state = StepState::kCached;
  plain.key = std::string(64, 'a');
  plain.reason = std::string(kCachedReason);
  plain.node = "vm";
  plain.cores = "0-1";
  plain.computed_by = "vm";
  plain.outputs["o"] = {"sha256:" + std::string(64, 'b'), "bytes",
                        "sha256:" + std::string(64, 'c')};
  plain.outputs["a b"] = {"x", "lines-sorted", "y"};
  plain.basis =
      R"({"command":"cp {in.src} {out.o}","inputs":{"src":[["in/1.txt","bytes sha256:00"]]},"tools":{}})";
  r.steps.push_back(plain);

  StepRecord odd = plain;
  odd.name = "s\"q\\";
  odd.state = StepState::kFailed;
  odd.reason = "input 'd\xc3\xa9j\xe0' \x01\n\t\"quoted\" \xff\xfe bad UTF-8 \x7f";
  odd.node = "";
  odd.start_s = 1.5;
  odd.end_s = 1e-7;
  odd.exit_code = -9;
  odd.outputs.clear();
  odd.basis.clear();
  odd.notices = {"the memory cap of 100 MB is not enforced", "\x01 odd \xff"};
  odd.log = "sha256:" + std::string(64, 'd');
  odd.log_tail = "Traceback\n  \"</pre>\"\xff\nAssertionError";
  odd.attempts = 3;
  odd.timed_out = true;
  r.steps.push_back(odd);

  StepRecord times = plain;
  times.state = StepState::kExecuted;
  times.start_s = 0.1 + 0.2;
  times.end_s = 12345678.000001;
  times.exit_code = 137;
  times.outputs["\xe2\x9c\x93"] = {"o", "json", "c"};
  r.steps.push_back(times);

  StepRecord inf = plain;
  inf.start_s = std::numeric_limits<double>::infinity();
  inf.end_s = std::numeric_limits<double>::quiet_NaN();
  r.steps.push_back(inf);

  std::string got = report_steps_json(r);
  EXPECT_EQ(got, reference(r));
  EXPECT_FALSE(json::parse(got, nullptr, false).is_discarded());
}

TEST(ReportSteps, AnyBytesInAnyStringAsNlohmannWritesThem) {
  // Strings of random bytes (a fixed seed), in every string field.
  uint32_t x = 12345;
  auto next = [&x] {
    x = x * 1103515245u + 12345u;
    return static_cast<char>((x >> 16) & 0xff);
  };
  RunReport r;
  for (int i = 0; i < 200; ++i) {
    auto bytes = [&](size_t n) {
      std::string b;
      for (size_t k = 0; k < n; ++k) b += next();
      return b;
    };
    StepRecord s;
    s.name = bytes(5);
    s.key = bytes(3);
    s.reason = bytes(40);
    s.node = bytes(4);
    s.cores = bytes(2);
    s.computed_by = bytes(6);
    if (i % 3 == 0) s.notices = {bytes(7), bytes(2)};
    s.outputs[bytes(3)] = {bytes(8), bytes(4), bytes(8)};
    r.steps.push_back(s);
  }
  EXPECT_EQ(report_steps_json(r), reference(r));
}

TEST(ReportSteps, FindStepBasisAgreesWithAFullParse) {
  RunReport r;
  for (const char* name : {"a", "a-1", "q\"uote", "b"}) {
    StepRecord s;
    s.name = name;
    s.reason = std::string("{\"name\":\"b\",\"state\":") + " in a reason";  // a decoy
    s.basis = std::string(R"({"command":"x","inputs":{"i":[["f","bytes sha256:)") + name[0] +
              R"("]]},"tools":{}})";
    r.steps.push_back(s);
  }
  r.steps[3].basis.clear();
  r.problems.push_back(R"({"name":"a","state":"cached","basis":{}})");  // another decoy
  std::string text = report_json(r);
  auto full = nlohmann::json::parse(text);
  for (const auto& s : full["steps"]) {
    auto found = find_step_basis(text, s["name"].get<std::string>());
    if (s.contains("basis")) {
      ASSERT_TRUE(found.has_value()) << s["name"];
      EXPECT_EQ(*found, s["basis"].dump());
    } else {
      EXPECT_EQ(found, std::nullopt);
    }
  }
  EXPECT_EQ(find_step_basis(text, "missing"), std::nullopt);
  EXPECT_EQ(find_step_basis(text, "a-"), std::nullopt);  // a prefix of a name is not it
  EXPECT_EQ(find_step_basis(text.substr(0, text.size() / 2), "b"), std::nullopt);
  EXPECT_EQ(find_step_basis("", "a"), std::nullopt);
  // Nested past any report's depth: refused, not parsed.
  std::string deep = R"({"name":"a","state":"cached","basis":)" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  EXPECT_EQ(find_step_basis(deep, "a"), std::nullopt);
}

TEST(ReportSteps, SettledStepsAreExecutedOnesAsCacheHits) {
  RunReport r;
  StepRecord e;
  e.name = "e";
  e.state = StepState::kExecuted;
  e.reason = "new: no earlier run of this step is recorded here";
  e.start_s = 1;
  e.end_s = 2;
  e.node = "n1";
  e.cores = "3";
  e.computed_by = "n1";
  r.steps.push_back(e);
  auto j = json::parse(settled_steps_json(r));
  EXPECT_EQ(j[0]["state"], "cached");
  EXPECT_EQ(j[0]["reason"], std::string(kCachedReason));
  EXPECT_EQ(j[0]["start_s"], 0.0);
  EXPECT_EQ(j[0]["end_s"], 0.0);
  EXPECT_EQ(j[0]["node"], "n1");
  EXPECT_EQ(j[0]["cores"], "3");
  // Nothing executed: the report's own steps.
  r.steps[0].state = StepState::kCached;
  EXPECT_EQ(settled_steps_json(r), report_steps_json(r));
}

TEST(LogTail, TheLastLinesWithinABudget) {
  std::string twelve;
  for (int i = 1; i <= 12; ++i) twelve += "line " + std::to_string(i) + "\n";
  std::string ten;
  for (int i = 3; i <= 12; ++i) ten += (i > 3 ? "\n" : "") + ("line " + std::to_string(i));
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"\n\n", ""},
      {"one", "one"},
      {"one\n", "one"},
      {"a\nb\r\n", "a\nb"},
      {twelve, ten},
      // A last line longer than the budget keeps its end.
      {"x\n" + std::string(3000, 'y'), std::string(kLogTailBytes, 'y')},
      // Cut where a UTF-8 character starts, never inside one.
      {"\xc3\xa9" + std::string(kLogTailBytes - 1, 'z'), std::string(kLogTailBytes - 1, 'z')},
  };
  for (const auto& [log, want] : cases) EXPECT_EQ(log_tail(log), want) << log.substr(0, 40);
  // Lines before the budget ran out are whole.
  std::string two = std::string(100, 'a') + "\n" + std::string(kLogTailBytes - 10, 'b');
  EXPECT_EQ(log_tail(two), std::string(kLogTailBytes - 10, 'b'));
}

TEST(ReportHtml, LinksEachStepToItsLogAndShowsAFailuresLastLinesEscaped) {
  RunReport r;
  StepRecord ok;
  ok.name = "ok";
  ok.state = StepState::kExecuted;
  ok.log = "sha256:" + std::string(64, '1');
  StepRecord bad;
  bad.name = "bad<1>";
  bad.state = StepState::kFailed;
  bad.reason = "rank 0 (sh) on vm exited with status 1";
  bad.log = "sha256:" + std::string(64, '2');
  bad.log_tail = "crunching\n<script>alert(1)</script> & done";
  StepRecord far;
  far.name = "far";
  far.state = StepState::kCached;
  far.log = "sha256:" + std::string(64, '3');
  StepRecord skipped;
  skipped.name = "after";
  skipped.state = StepState::kSkipped;
  r.steps = {ok, bad, far, skipped};
  std::map<std::string, EmbeddedLog> logs;
  logs["ok"] = {"all fine\n", 9};
  logs["bad<1>"] = {"</pre><b>tail</b>", 5000};
  std::string page = report_html(r, logs);
  // Embedded logs are linked and escaped; a log not embedded names the command.
  EXPECT_NE(page.find("<a class=\"log\" href=\"#log-0\">log</a>"), std::string::npos);
  EXPECT_NE(page.find("<section class=\"log\" id=\"log-0\" data-step=\"ok\"><h3>ok</h3>"
                      "<pre>all fine\n</pre></section>"),
            std::string::npos);
  EXPECT_NE(page.find("<pre>&lt;/pre&gt;&lt;b&gt;tail&lt;/b&gt;</pre>"), std::string::npos);
  EXPECT_NE(page.find("The last 17 of 5000 bytes; all of it: <code>berth log bad&lt;1&gt;</code>"),
            std::string::npos);
  EXPECT_NE(page.find("<code>berth log far</code>"), std::string::npos);
  // The failure's last lines under its row, escaped.
  EXPECT_NE(page.find("<tr class=\"log-tail\" data-step=\"bad&lt;1&gt;\"><td colspan=\"9\">"
                      "<pre>crunching\n&lt;script&gt;alert(1)&lt;/script&gt; &amp; done</pre>"),
            std::string::npos);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("data-step=\"after\"><td colspan"), std::string::npos);
}

TEST(ReportSteps, SettledStepsKeepTheirLogButNotAFailuresFields) {
  RunReport r;
  StepRecord e;
  e.name = "e";
  e.state = StepState::kExecuted;
  e.log = "sha256:" + std::string(64, '1');
  e.attempts = 2;
  r.steps.push_back(e);
  auto j = json::parse(settled_steps_json(r));
  EXPECT_EQ(j[0]["log"], e.log);
  EXPECT_FALSE(j[0].contains("attempts"));
  j = json::parse(report_steps_json(r));
  EXPECT_EQ(j[0]["attempts"], 2);
}

}  // namespace
}  // namespace berth::pipeline
