#include "pipeline/template.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

using K = Segment::Kind;

TEST(Template, ParseSplitsLiteralsAndPlaceholders) {
  struct Case {
    const char* text;
    std::vector<TemplatePiece> want;
  };
  const Case cases[] = {
      {"", {}},
      {"plain", {{false, "plain"}}},
      {"{a}", {{true, "a"}}},
      {"x{a}y{in.b}", {{false, "x"}, {true, "a"}, {false, "y"}, {true, "in.b"}}},
      {"{{literal}}", {{false, "{literal}"}}},
      {"awk '{{print $1}}' {in.t}", {{false, "awk '{print $1}' "}, {true, "in.t"}}},
      {"{{{a}}}", {{false, "{"}, {true, "a"}, {false, "}"}}},
  };
  for (const Case& c : cases) {
    auto r = parse_template(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
    EXPECT_EQ(*r, c.want) << c.text;
  }
}

TEST(Template, ParseRejectsUnbalancedBraces) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"{a", "column 1: unclosed '{'"},      {"x}", "column 2: lone '}'"},
      {"{}", "column 1: empty placeholder"}, {"{a{b}}", "column 1: unclosed '{'"},
      {"ok {{ {", "column 7: unclosed"},
  };
  for (const Case& c : cases) {
    auto r = parse_template(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().message();
  }
}

TEST(Template, ExpandResolvesEveryKindOfPlaceholder) {
  std::map<std::string, std::string> b{{"sample", "a"}};
  std::map<std::string, Param> p{{"min", {Param::Type::kInteger, "2"}}};
  std::set<std::string> in{"text"}, out{"counts"};
  Scope s{&b, &p, nullptr, nullptr, &in, &out, 4, 1, 2, std::nullopt, nullptr, std::nullopt};
  auto r = expand_template("{sample}:{param.min} {cores}/{gpus}/{tasks} {in.text}>{out.counts}", s);
  ASSERT_TRUE(r.ok()) << r.error().message();
  Word want{{K::kText, "a:2 4/1/2 "}, {K::kInput, "text"}, {K::kText, ">"}, {K::kOutput, "counts"}};
  EXPECT_EQ(*r, want);
}

TEST(Template, ExpandRejectsPlaceholdersThatNameNothing) {
  std::map<std::string, std::string> b{{"sample", "a"}};
  std::map<std::string, Param> p{{"min", {Param::Type::kInteger, "2"}}};
  std::set<std::string> in{"text"}, out{"counts"};
  Scope s{&b, &p, nullptr, nullptr, &in, &out, 4, 0, 1, std::nullopt, nullptr, std::nullopt};
  for (const char* t : {"{smaple}", "{param.max}", "{in.txt}", "{out.count}", "{nodes}", "{param.}",
                        "{in.}", "{ sample }", "{IN.text}"}) {
    auto r = expand_template(t, s);
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_NE(r.error().message().find("names nothing"), std::string::npos) << t;
    EXPECT_NE(r.error().message().find(t), std::string::npos) << r.error().message();
  }
}

TEST(Template, ExpandPlainRefusesPaths) {
  std::set<std::string> in{"text"};
  Scope s;
  s.inputs = &in;
  EXPECT_TRUE(expand_template("{in.text}", s).ok());
  EXPECT_FALSE(expand_plain("{in.text}", s).ok());
  auto r = expand_plain("a{{b}}", s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "a{b}");
}

// A compiled template expands, for any values of its keys, to what expand_template()
// gives for a scope binding them; params and resources are resolved once.
TEST(Template, CompiledOnceExpandsForEachCombination) {
  std::map<std::string, Param> p{{"min", {Param::Type::kInteger, "2"}}};
  std::set<std::string> in{"text"}, out{"counts"};
  Scope s{nullptr, &p, nullptr, nullptr, &in, &out, 4, 1, 2, std::nullopt, nullptr, std::nullopt};
  const std::vector<std::string> keys = {"a", "sample"};
  auto t = Template::compile("{sample}:{param.min}{{x}} {cores} {in.text}>{out.counts}.{a}{a}",
                             keys, s);
  ASSERT_TRUE(t.ok()) << t.error().message();
  for (auto [a, sample] : std::vector<std::pair<std::string, std::string>>{
           {"1", "x"}, {"", "y"}, {"{a}", ""}}) {
    std::map<std::string, std::string> b{{"a", a}, {"sample", sample}};
    Scope bound = s;
    bound.bindings = &b;
    auto want = expand_template("{sample}:{param.min}{{x}} {cores} {in.text}>{out.counts}.{a}{a}",
                                bound);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(t->expand({a, sample}), *want) << a << " " << sample;
  }
  EXPECT_TRUE(t->uses_key(0));
  EXPECT_TRUE(t->uses_key(1));
  EXPECT_EQ(t->inputs(), (std::vector<std::string>{"text"}));
  EXPECT_FALSE(t->only_one_piece());

  auto plain = Template::compile("s-{a}-{sample}", keys, Scope{});
  ASSERT_TRUE(plain.ok());
  std::string a = "7", sample = "q";
  EXPECT_EQ(plain->expand_plain({a, sample}), "s-7-q");
  EXPECT_FALSE(plain->uses_key(2));

  auto whole = Template::compile("{in.text}", keys, s);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->only_one_piece());

  auto bad = Template::compile("{sample}{nope}", keys, s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("placeholder {nope} names nothing"), std::string::npos);
}

}  // namespace
}  // namespace berth::pipeline
