#include "pipeline/key.h"

#include <gtest/gtest.h>

#include <functional>

#include "pipeline/command.h"
#include "util/sha256.h"

namespace berth::pipeline {
namespace {

constexpr const char* kBase = R"(
[tools.sort]
version = ["sort", "--version"]
[tools.uniq]
version = ["uniq", "--version"]

[[step]]
name = "s"
inputs = { text = "a.txt", parts = ["b.txt", "c.txt"] }
run = "sort -k{param.k} {in.text} {in.parts} > {out.counts}"
outputs = ["counts", "log"]
params = { k = 2, mode = "fast" }
tools = ["sort", "uniq"]
cores = 1
env = { LC_ALL = "C", TMP = "{out.log}" }
canonical = { counts = "lines-sorted" }
)";

InputHashes base_hashes() {
  return {{"text", {{"bytes", "sha256:aa"}}},
          {"parts", {{"bytes", "sha256:bb"}, {"bytes", "sha256:cc"}}}};
}
ToolVersions base_tools() { return {{"sort", "sort (GNU coreutils) 9.1"}, {"uniq", "uniq 9.1"}}; }

// `text` with the first `from` replaced by `to`; a test bug when `from` is absent.
std::string with(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

Step step_of(const std::string& text, const std::string& path = "p.toml") {
  auto pf = parse_pipeline(text, path);
  if (!pf.ok()) {
    ADD_FAILURE() << pf.error().message();
    return Step{};
  }
  auto g = expand(*pf, [](const std::string&) { return true; });
  EXPECT_TRUE(g.ok()) << g.error().message();
  return g.ok() ? g->steps.at(0) : Step{};
}

std::string key(const std::string& text, const InputHashes& h = base_hashes(),
                const ToolVersions& t = base_tools(), const std::string& path = "p.toml") {
  auto k = key_of(step_of(text, path), h, t);
  EXPECT_TRUE(k.ok()) << k.error().message();
  return k.ok() ? *k : "";
}

struct Variant {
  const char* what;
  std::string text;
  InputHashes hashes = base_hashes();
  ToolVersions tools = base_tools();
  std::string path = "p.toml";
};

TEST(Key, IsSha256HexOfItsPreimageStartingWithTheFormatVersion) {
  Step s = step_of(kBase);
  auto pre = key_preimage(s, base_hashes(), base_tools());
  ASSERT_TRUE(pre.ok());
  EXPECT_EQ(pre->substr(0, 8), std::string(7, '\0') + static_cast<char>(kKeyFormat.size()));
  EXPECT_EQ(pre->substr(8, kKeyFormat.size()), kKeyFormat);
  auto k = key_of(s, base_hashes(), base_tools());
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(is_sha256_hex(*k));
  EXPECT_EQ(*k, sha256_hex(*pre));
}

TEST(Key, ChangesWhenAnyKeyedFieldChanges) {
  const std::string b = kBase;
  auto hashes = [](std::function<void(InputHashes&)> f) {
    InputHashes h = base_hashes();
    f(h);
    return h;
  };
  auto tools = [](std::function<void(ToolVersions&)> f) {
    ToolVersions t = base_tools();
    f(t);
    return t;
  };
  const std::string cmd_base =
      with(b, "run = \"sort -k{param.k} {in.text} {in.parts} > {out.counts}\"",
           "cmd = [\"sort\", \"-k{param.k}\", \"{in.text}\", \"{in.parts}\"]");
  const std::vector<Variant> variants = {
      {"command text", with(b, "sort -k", "sort -rk")},
      {"which input goes where", with(b, "{in.text} {in.parts}", "{in.parts} {in.text}")},
      {"an output placeholder", with(b, "> {out.counts}", "> {out.log}")},
      {"argv word boundaries", with(cmd_base, "\"sort\", \"-k{param.k}\"", "\"sort -k{param.k}\"")},
      {"an output made a directory", with(b, "\"counts\", \"log\"]", "\"counts\", \"log/\"]")},
      {"a param value", with(b, "k = 2", "k = 3")},
      {"a param type", with(b, "k = 2", "k = \"2\"")},
      {"a param name", with(b, "mode = \"fast\"", "mood = \"fast\"")},
      {"an added param", with(b, "mode = \"fast\"", "mode = \"fast\", extra = true")},
      {"an env value", with(b, "LC_ALL = \"C\"", "LC_ALL = \"en_US.UTF-8\"")},
      {"an added env var", with(b, "LC_ALL = \"C\"", "LC_ALL = \"C\", X = \"1\"")},
      {"an env path placeholder", with(b, "TMP = \"{out.log}\"", "TMP = \"{out.counts}\"")},
      {"an input's hash", b, hashes([](InputHashes& h) { h["text"][0].hash = "sha256:ab"; })},
      // The name it is staged under reaches the command (gunzip needs .gz): keyed.
      {"an input file's name, same content", with(b, "a.txt", "a.txt.gz")},
      {"an input's form", b, hashes([](InputHashes& h) { h["text"][0].form = "lines-sorted"; })},
      {"a list input's order", b,
       hashes([](InputHashes& h) { std::swap(h["parts"][0], h["parts"][1]); })},
      {"an input's name",
       with(with(b, "text = \"a.txt\"", "txt = \"a.txt\""), "{in.text}", "{in.txt}"),
       hashes([](InputHashes& h) {
         h["txt"] = h["text"];
         h.erase("text");
       })},
      {"a single input becoming a list of one", with(b, "text = \"a.txt\"", "text = [\"a.txt\"]")},
      {"an added output", with(b, "\"counts\", \"log\"", "\"counts\", \"log\", \"more\"")},
      {"an output's canonical form", with(b, "\"lines-sorted\"", "\"json\"")},
      {"an output's default form made explicit to another",
       with(b, "counts = \"lines-sorted\"", "counts = \"lines-sorted\", log = \"json\"")},
      {"a tool's version text", b, base_hashes(),
       tools([](ToolVersions& t) { t["sort"] = "sort 9.2"; })},
      {"a tool dropped", with(b, "tools = [\"sort\", \"uniq\"]", "tools = [\"sort\"]")},
      {"referenced cores",
       with(with(b, "sort -k", "sort --parallel={cores} -k"), "cores = 1", "cores = 2")},
  };
  const std::string base_key = key(b);
  // Each variant differs from the base; the referenced-cores variant is compared
  // against its own base too, so it is the core count and not the text that changed it.
  for (const Variant& v : variants) {
    EXPECT_NE(key(v.text, v.hashes, v.tools, v.path), base_key) << v.what;
  }
  // A run and a one-word cmd of the same text are different commands (sh -c or not).
  const std::string run_line = "run = \"sort -k{param.k} {in.text} {in.parts} > {out.counts}\"";
  EXPECT_NE(key(with(b, run_line, "run = \"x {in.text}\"")),
            key(with(b, run_line, "cmd = [\"x {in.text}\"]")));
  EXPECT_NE(key(with(b, "sort -k", "sort --parallel={cores} -k")),
            key(with(with(b, "sort -k", "sort --parallel={cores} -k"), "cores = 1", "cores = 2")));
}

TEST(Key, DoesNotChangeForAnythingElse) {
  const std::string b = kBase;
  const std::vector<Variant> variants = {
      {"the step's name", with(b, "name = \"s\"", "name = \"renamed\"")},
      {"a foreach that only names",
       with(b, "name = \"s\"", "name = \"s-{x}\"\nforeach = {x=[\"q\"]}")},
      {"where the pipeline file is", b, base_hashes(), base_tools(), "/elsewhere/deep/p.toml"},
      {"an input file's directory, same name and content", with(b, "a.txt", "moved/a.txt")},
      {"unreferenced cores", with(b, "cores = 1", "cores = 64")},
      {"gpus, tasks, nodes and memory",
       with(b, "cores = 1", "cores = 1\ngpus = 4\ntasks = 8\nnodes = 2\nmemory_cap_mb = 999")},
      {"the order of params", with(b, "k = 2, mode = \"fast\"", "mode = \"fast\", k = 2")},
      {"the order of inputs", with(b, "text = \"a.txt\", parts = [\"b.txt\", \"c.txt\"]",
                                   "parts = [\"b.txt\", \"c.txt\"], text = \"a.txt\"")},
      {"the order of env vars",
       with(b, "LC_ALL = \"C\", TMP = \"{out.log}\"", "TMP = \"{out.log}\", LC_ALL = \"C\"")},
      {"the order of tools", with(b, "[\"sort\", \"uniq\"]", "[\"uniq\", \"sort\"]")},
      {"the order of keys in the table", with(b, "cores = 1\n", "") + "cores = 1\n"},
      {"an explicit default canonical form",
       with(b, "counts = \"lines-sorted\"", "counts = \"lines-sorted\", log = \"bytes\"")},
      {"comments and spacing", with(b, "params = { k = 2,", "# c\nparams   =   {k=2,")},
      {"a param's spelling", with(b, "k = 2", "k = +2")},
      {"escaped braces spelt by a placeholder of the same text",
       with(b, "sort -k{param.k}", "sort -k2")},
      {"unrelated extra hashes and tools", b,
       [] {
         InputHashes h = base_hashes();
         h["other"] = {{"bytes", "sha256:ff"}};
         return h;
       }(),
       [] {
         ToolVersions t = base_tools();
         t["cat"] = "cat 1";
         return t;
       }()},
  };
  const std::string base_key = key(b);
  for (const Variant& v : variants) {
    EXPECT_EQ(key(v.text, v.hashes, v.tools, v.path), base_key) << v.what;
  }
}

TEST(Key, DoesNotDependOnTheStagingDirectory) {
  Step s = step_of(kBase);
  auto k = key_of(s, base_hashes(), base_tools());
  ASSERT_TRUE(k.ok());
  StagedPaths p1{{{"text", {"/tmp/x/in/text"}}, {"parts", {"/tmp/x/in/p0", "/tmp/x/in/p1"}}},
                 {{"counts", "/tmp/x/out/counts"}, {"log", "/tmp/x/out/log"}}};
  StagedPaths p2{{{"text", {"/scratch/y/t"}}, {"parts", {"/scratch/y/0", "/scratch/y/1"}}},
                 {{"counts", "/scratch/y/c"}, {"log", "/scratch/y/l"}}};
  auto r1 = render_command(s, p1);
  auto r2 = render_command(s, p2);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_NE(r1->argv, r2->argv);                           // the rendered commands differ...
  EXPECT_EQ(*key_of(s, base_hashes(), base_tools()), *k);  // ...the key is one value
}

TEST(Key, FailsWhenAHashOrVersionIsMissing) {
  Step s = step_of(kBase);
  InputHashes missing = base_hashes();
  missing.erase("text");
  InputHashes short_list = base_hashes();
  short_list["parts"].pop_back();
  ToolVersions no_uniq = base_tools();
  no_uniq.erase("uniq");
  struct Case {
    InputHashes h;
    ToolVersions t;
    const char* want;
  };
  const Case cases[] = {
      {missing, base_tools(), "step 's': key: no hash for input 'text'"},
      {short_list, base_tools(), "input 'parts' has 2 items but 1 hashes"},
      {base_hashes(), no_uniq, "no version for tool 'uniq'"},
  };
  for (const Case& c : cases) {
    auto k = key_of(s, c.h, c.t);
    ASSERT_FALSE(k.ok()) << c.want;
    EXPECT_NE(k.error().message().find(c.want), std::string::npos) << k.error().message();
  }
}

}  // namespace
}  // namespace berth::pipeline
