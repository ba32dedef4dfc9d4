#include "pipeline/command.h"

#include <gtest/gtest.h>

#include "pipeline/pipeline_file.h"

namespace berth::pipeline {
namespace {

Step expand_single(const std::string& toml) {
  auto pf = parse_pipeline(toml, "p.toml");
  EXPECT_TRUE(pf.ok()) << pf.error().message();
  auto g = expand(*pf, [](const std::string&) { return true; });
  EXPECT_TRUE(g.ok()) << g.error().message();
  return g->steps.back();
}

TEST(Command, ShellQuote) {
  const std::pair<const char*, const char*> cases[] = {
      {"a/b.txt", "a/b.txt"}, {"", "''"},           {"a b", "'a b'"},
      {"it's", "'it'\\''s'"}, {"$HOME", "'$HOME'"}, {"x=1,y:2@%+-_.", "x=1,y:2@%+-_."},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(shell_quote(in), want) << in;
}

TEST(Command, RunQuotesPathsAndJoinsLists) {
  Step s = expand_single(R"(
[[step]]
name = "t"
inputs = { parts = ["x", "y"], one = "z" }
run = "cat {in.parts} {in.one} > {out.sum}"
outputs = ["sum"]
)");
  StagedPaths p{{{"parts", {"/s/in/parts/0", "/s/in/parts/1 x"}}, {"one", {"/s/o"}}},
                {{"sum", "/s/out/sum"}}};
  auto r = render_command(s, p);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->shell);
  EXPECT_EQ(r->argv, (std::vector<std::string>{
                         "sh", "-c", "cat /s/in/parts/0 '/s/in/parts/1 x' /s/o > /s/out/sum"}));
}

TEST(Command, CmdGivesOneWordPerListItemAndNoShell) {
  Step s = expand_single(R"(
[[step]]
name = "t"
inputs = { parts = ["x", "y"], one = "z" }
cmd = ["cat", "{in.parts}", "--one={in.one}", "-o", "{out.sum}", "{{x}}"]
outputs = ["sum"]
env = { OUT = "{out.sum}", ALL = "{in.parts}" }
)");
  StagedPaths p{{{"parts", {"/a b", "/c"}}, {"one", {"/o"}}}, {{"sum", "/s/sum"}}};
  auto r = render_command(s, p);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->shell);
  EXPECT_EQ(r->argv,
            (std::vector<std::string>{"cat", "/a b", "/c", "--one=/o", "-o", "/s/sum", "{x}"}));
  EXPECT_EQ(r->env, (std::map<std::string, std::string>{{"ALL", "/a b /c"}, {"OUT", "/s/sum"}}));
}

TEST(Command, RenderFailsOnMissingOrMiscountedPaths) {
  Step s = expand_single(R"(
[[step]]
name = "t"
inputs = { parts = ["x", "y"] }
run = "cat {in.parts} > {out.sum}"
outputs = ["sum"]
)");
  EXPECT_FALSE(render_command(s, {{}, {{"sum", "/s"}}}).ok());
  EXPECT_FALSE(render_command(s, {{{"parts", {"/a"}}}, {{"sum", "/s"}}}).ok());
  EXPECT_FALSE(render_command(s, {{{"parts", {"/a", "/b"}}}, {}}).ok());
  EXPECT_TRUE(render_command(s, {{{"parts", {"/a", "/b"}}}, {{"sum", "/s"}}}).ok());
}

TEST(Command, DescribeKeepsPlaceholdersAndEscapes) {
  Step s = expand_single(R"(
[[step]]
name = "t"
inputs = { text = "x" }
params = { n = 3 }
run = "awk '{{print $1}}' {in.text} | head -{param.n} > {out.o}"
outputs = ["o"]
)");
  EXPECT_EQ(describe_command(s), "awk '{{print $1}}' {in.text} | head -3 > {out.o}");
}

}  // namespace
}  // namespace berth::pipeline
