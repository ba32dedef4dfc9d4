#include "pipeline/pipeline_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "pipeline/testdata.h"

namespace berth::pipeline {
namespace {

TEST(PipelineFile, ParsesTheSpecExample) {
  auto r = parse_pipeline(testdata::kSpecExample, "work/example.toml");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const PipelineFile& pf = *r;
  EXPECT_EQ(pf.name, "example");
  EXPECT_EQ(pf.dir, "work");
  ASSERT_EQ(pf.tools.size(), 1u);
  EXPECT_EQ(pf.tools.at("sort").version, (std::vector<std::string>{"sort", "--version"}));
  ASSERT_EQ(pf.steps.size(), 2u);
  const StepSpec& c = pf.steps[0];
  EXPECT_EQ(c.name, "count-{sample}");
  EXPECT_EQ(c.pos.line, 7u);
  EXPECT_EQ(c.foreach.at("sample"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(c.run, "sort {in.text} | uniq -c > {out.counts}");
  EXPECT_FALSE(c.cmd);
  EXPECT_EQ(c.inputs.at("text").values, (std::vector<std::string>{"data/{sample}.txt"}));
  EXPECT_FALSE(c.inputs.at("text").is_list);
  EXPECT_EQ(c.outputs, (std::vector<std::string>{"counts"}));
  EXPECT_EQ(c.params.at("min"), (Param{Param::Type::kInteger, "2"}));
  EXPECT_EQ(c.tools, (std::vector<std::string>{"sort"}));
  EXPECT_EQ(c.cores, 1);
  EXPECT_EQ(c.gpus, 0);
  EXPECT_EQ(c.canonical.at("counts"), "lines-sorted");
  const StepSpec& t = pf.steps[1];
  EXPECT_EQ(t.index, 1u);
  EXPECT_TRUE(t.inputs.at("parts").is_list);
  EXPECT_EQ(t.inputs.at("parts").values.size(), 3u);
}

// Keeping the parsed document (for a process to leave to the OS) reads the same file,
// and hands over the document; a file that does not parse hands over none.
TEST(PipelineFile, KeepingTheDocumentReadsTheSameFile) {
  std::shared_ptr<const void> document;
  auto kept = parse_pipeline(testdata::kSpecExample, "work/example.toml", document);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_NE(document, nullptr);
  auto plain = parse_pipeline(testdata::kSpecExample, "work/example.toml");
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(kept->steps.size(), plain->steps.size());
  for (size_t i = 0; i < kept->steps.size(); ++i) {
    EXPECT_EQ(kept->steps[i].name, plain->steps[i].name);
    EXPECT_EQ(kept->steps[i].run, plain->steps[i].run);
    EXPECT_EQ(kept->steps[i].pos.line, plain->steps[i].pos.line);
  }
  document.reset();
  std::shared_ptr<const void> none;
  EXPECT_FALSE(parse_pipeline("[[step]\n", "bad.toml", none).ok());
  EXPECT_EQ(none, nullptr);
}

// The same text with every "[[step]]" header written "[[ step ]]": the same TOML,
// which split_step_tables() does not split, so it is read whole.
std::string unsplittable(std::string text) {
  for (size_t at = text.find("[[step]]"); at != std::string::npos;
       at = text.find("[[step]]", at)) {
    text.replace(at, 8, "[[ step ]]");
  }
  return text;
}

void expect_same_file(const std::string& text) {
  auto by_table = parse_pipeline(text, "d/p.toml");
  auto whole = parse_pipeline(unsplittable(text), "d/p.toml");
  ASSERT_EQ(by_table.ok(), whole.ok()) << text;
  if (!whole.ok()) {
    EXPECT_EQ(by_table.error().message(), whole.error().message());
    return;
  }
  EXPECT_EQ(by_table->name, whole->name);
  EXPECT_EQ(by_table->tools, whole->tools);
  ASSERT_EQ(by_table->steps.size(), whole->steps.size());
  for (size_t i = 0; i < whole->steps.size(); ++i) {
    EXPECT_EQ(by_table->steps[i], whole->steps[i]) << "step " << i << " of\n" << text;
  }
}

TEST(PipelineFile, SplitsAtEachStepHeaderLine) {
  std::string text =
      "[pipeline]\nname = \"x\"\n\n"   // lines 1-3
      "[[step]]\nname = \"a\"\n"       // 4-5
      "[[step]] # the second\n"        // 6
      "name = \"b\"\n"                 // 7
      "[[step]]x = 1\n"                // 8: not a header line
      "  [[step]]\n"                   // 9: not at the line's start
      "[[step]]";                      // 10, no newline
  auto split = split_step_tables(text);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->head, text.find("[[step]]"));
  ASSERT_EQ(split->tables.size(), 3u);
  EXPECT_EQ(split->tables[0].line, 4u);
  EXPECT_EQ(split->tables[1].line, 6u);
  EXPECT_EQ(split->tables[2].line, 10u);
  EXPECT_EQ(split->tables[0].offset, split->head);
  for (size_t i = 0; i + 1 < split->tables.size(); ++i) {
    EXPECT_EQ(split->tables[i].offset + split->tables[i].length, split->tables[i + 1].offset);
  }
  EXPECT_EQ(split->tables[2].offset + split->tables[2].length, text.size());
  EXPECT_EQ(text.substr(split->tables[1].offset, 8), "[[step]]");

  auto first = split_step_tables("[[step]]\r\nname = \"a\"\r\n");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->head, 0u);
  EXPECT_EQ(first->tables.size(), 1u);
  EXPECT_FALSE(split_step_tables("[pipeline]\nname = \"x\"\n"));
  EXPECT_FALSE(split_step_tables("[[ step ]]\nname = \"a\"\n"));
}

// Read table by table, a file gives what it gives read whole: every field, every
// position (which later messages name), every error message.
TEST(PipelineFile, ReadingByTableGivesWhatReadingWholeGives) {
  std::string tools =
      "[pipeline]\nname = \"same\"\n[tools.sort]\nversion = [\"sort\", \"--version\"]\n\n";
  expect_same_file(tools +
                   "[[step]]\nname = \"count-{s}\"\nforeach = { s = [\"a\", \"b\"] }\n"
                   "run = \"sort {in.text} > {out.o}\"\ninputs = { text = \"data/{s}.txt\" }\n"
                   "outputs = [\"o\"]\ntools = [\"sort\"]\nparams = { min = 2, f = 0.5 }\n"
                   "canonical = { o = \"lines-sorted\" }\n"
                   "[step.env]\nA = \"{s}\"\n\n"
                   "[[step]]\nname = \"merge\"\ncmd = [\"cat\", \"{in.parts}\"]\n"
                   "inputs.parts = [\"@count-a/o\", \"@count-b/o\"]\noutputs = [\"m\"]\n"
                   "cores = 2\ntimeout = \"5m\"\nretries = 1\n"
                   "[[step]]\nname = \"g-{k}\"\nforeach = { k = { glob = \"in/{k}.txt\" } }\n"
                   "run = \"true\"\n");
  expect_same_file(std::string(testdata::kSpecExample));
  // A multi-line string holding a "[[step]]" line: split there, the pieces do not
  // parse alone, and the file is read whole.
  // (Not expect_same_file(): "[[ step ]]" would change the string.)
  auto in_string = parse_pipeline(
      "[[step]]\nname = \"a\"\nrun = \"\"\"\necho\n[[step]]\necho\n\"\"\"\n"
      "[[step]]\nname = \"b\"\nrun = \"true\"\n",
      "d/p.toml");
  ASSERT_TRUE(in_string.ok()) << in_string.error().message();
  ASSERT_EQ(in_string->steps.size(), 2u);
  EXPECT_EQ(in_string->steps[0].run, "echo\n[[step]]\necho\n");
  EXPECT_EQ(in_string->steps[1].pos.line, 8u);
  // A table after the steps belongs to the file, not to the last step.
  expect_same_file("[[step]]\nname = \"a\"\nrun = \"true\"\ntools = [\"t\"]\n"
                   "[tools.t]\nversion = [\"t\", \"-v\"]\n");
  // The head says something about `step`.
  expect_same_file("step = []\n[[step]]\nname = \"a\"\nrun = \"true\"\n");
  // Errors: a piece that does not read gives the whole file's message.
  expect_same_file("[[step]]\nname = \"a\"\nrun = \"true\"\n[[step]]\nname = \"b\"\nrn = 1\n");
  expect_same_file("[[step]]\nname = \"a\"\nrun = \"true\"\n[[step]]\nname = \"b\"\nrun = [\n");
  expect_same_file("[[step]]\nname = \"a\"\nrun = \"true\"\n[[step]]\nname = \"a\"\nrun = \"x\"\n");
  expect_same_file("[pipeline]\nname = 3\n[[step]]\nname = \"a\"\nrun = \"true\"\n");
  // Enough tables to be read on two threads, each with its own line.
  std::string many = tools;
  for (int i = 0; i < 1500; ++i) {
    many += fmt::format("[[step]]\nname = \"s-{}\"\ncmd = [\"touch\", \"{{out.o}}\"]\n"
                        "outputs = [\"o\"]\ninputs = {{ x = \"in/{}.txt\" }}\n"
                        "env = {{ I = \"{}\" }}\n\n",
                        i, i, i);
  }
  expect_same_file(many);
  auto pf = parse_pipeline(many, "d/p.toml");
  ASSERT_TRUE(pf.ok());
  ASSERT_EQ(pf->steps.size(), 1500u);
  EXPECT_EQ(pf->steps[1499].name, "s-1499");
  EXPECT_EQ(pf->steps[1499].index, 1499u);
  EXPECT_EQ(pf->steps[1499].pos.line, 6u + 1499u * 7u);
  EXPECT_EQ(pf->steps[1499].inputs.at("x").pos.line, 6u + 1499u * 7u + 4u);
}

TEST(PipelineFile, AnOutputEndingInASlashIsADirectory) {
  auto r = parse_pipeline(
      "[[step]]\nname = 's'\nrun = 'x'\noutputs = ['plots/', 'table.csv', 'raw/']\n", "p.toml");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const StepSpec& s = r->steps[0];
  // The names stay bare: {out.plots}, @s/plots, results/s/plots.
  EXPECT_EQ(s.outputs, (std::vector<std::string>{"plots", "table.csv", "raw"}));
  EXPECT_EQ(s.directories, (std::set<std::string>{"plots", "raw"}));
}

TEST(PipelineFile, ZeroCoresIsAStepThatNeedsNoCoreOfItsOwnInAStepOrInDefaults) {
  auto own = parse_pipeline("[[step]]\nname = 's'\nrun = 'x'\ncores = 0\n", "p.toml");
  ASSERT_TRUE(own.ok()) << own.error().message();
  EXPECT_EQ(own->steps[0].cores, 0);
  auto given = parse_pipeline(
      "[defaults]\ncores = 0\n[[step]]\nname = 'a'\nrun = 'x'\n"
      "[[step]]\nname = 'b'\nrun = 'x'\ncores = 2\n",
      "p.toml");
  ASSERT_TRUE(given.ok()) << given.error().message();
  EXPECT_EQ(given->steps[0].cores, 0);
  EXPECT_EQ(given->steps[1].cores, 2);
}

TEST(PipelineFile, AFractionOfAGpuIsAShareOfOneDevice) {
  auto whole = parse_pipeline("[[step]]\nname = 's'\nrun = 'x'\ngpus = 2.0\n", "p.toml");
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_EQ(whole->steps[0].gpus, 2);
  EXPECT_EQ(whole->steps[0].gpu_share, 0);
  for (auto [text, share] : {std::pair{"0.5", 500}, {"0.25", 250}, {"0.001", 1}, {"0.999", 999},
                             {"0.1", 100}}) {
    auto r = parse_pipeline(std::string("[[step]]\nname = 's'\nrun = 'x'\ngpus = ") + text + "\n",
                            "p.toml");
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message();
    EXPECT_EQ(r->steps[0].gpu_share, share) << text;
    EXPECT_EQ(r->steps[0].gpus, 0) << text;
  }
}

TEST(PipelineFile, ParsesEveryOptionalKey) {
  auto r = parse_pipeline(R"(
[[step]]
name = "s-{n}-{k}"
foreach = { n = [1, 2], k = ["x"] }
cmd = ["tool", "{in.a}"]
inputs = { a = "a.txt" }
outputs = ["o", "p"]
params = { s = "str", i = -3, f = 0.5, b = true }
cores = 8
gpus = 2
tasks = 4
nodes = 2
memory_cap_mb = 1024
retries = 2
timeout = "1.5m"
canonical = { o = "json", p = "command:sort -u" }
env = { OMP_NUM_THREADS = "{cores}" }
)",
                          "dir/sub/p.toml");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "p");  // no [pipeline]: the file's stem
  EXPECT_EQ(r->dir, "dir/sub");
  const StepSpec& s = r->steps[0];
  EXPECT_EQ(s.foreach.at("n"), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(s.cmd, (std::vector<std::string>{"tool", "{in.a}"}));
  EXPECT_EQ(s.params.at("s"), (Param{Param::Type::kString, "str"}));
  EXPECT_EQ(s.params.at("i"), (Param{Param::Type::kInteger, "-3"}));
  EXPECT_EQ(s.params.at("f"), (Param{Param::Type::kFloat, "0.5"}));
  EXPECT_EQ(s.params.at("b"), (Param{Param::Type::kBoolean, "true"}));
  EXPECT_EQ(s.cores, 8);
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(s.tasks, 4);
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.memory_cap_mb, 1024);
  EXPECT_EQ(s.retries, 2);
  EXPECT_EQ(s.timeout, std::chrono::milliseconds(90'000));
  EXPECT_EQ(s.canonical.at("p"), "command:[\"sort\",\"-u\"]");  // canonical.h's name
  EXPECT_EQ(s.env.at("OMP_NUM_THREADS"), "{cores}");
}

TEST(PipelineFile, FloatParamTextDependsOnValueNotSpelling) {
  auto a = parse_pipeline("[[step]]\nname='s'\nrun='x'\nparams={f=1.50}\n", "p.toml");
  auto b = parse_pipeline("[[step]]\nname='s'\nrun='x'\nparams={f=15e-1}\n", "p.toml");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->steps[0].params.at("f").text, b->steps[0].params.at("f").text);
}

// Each bad file, and what its error must say: the file, the place, the step, the key.
TEST(PipelineFile, RejectsBadFilesNamingFileStepAndKey) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"[pipeline\n", "p.toml:1:"},
      {"x = 1\n", "p.toml:1:5: x: unknown key"},
      {"[pipeline]\nname = 'a'\ntitle = 'b'\n", "p.toml:3:9: pipeline.title: unknown key"},
      {"[pipeline]\nname = 3\n", "pipeline.name: must be a string, not an integer"},
      {"[pipeline]\nname = ''\n", "pipeline.name: must not be empty"},
      {"[tools.sort]\n", "p.toml:1:1: tools.sort.version: missing"},
      {"[tools.sort]\nversion = []\n", "tools.sort.version: must not be empty"},
      {"[tools.sort]\nversion = 'sort --version'\n", "tools.sort.version: must be an array"},
      {"[tools.sort]\nversion = ['a']\nx = 1\n", "tools.sort.x: unknown key"},
      {"[tools.'a b']\nversion = ['a']\n", "tools.a b: 'a b' has a character outside"},
      {"[tools]\nsort = 1\n", "tools.sort: must be a table"},
      {"step = 1\n", "step: must be an array of tables"},
      {"step = [1]\n", "step: each step must be a table"},
      {"[[step]]\nrun = 'x'\n", "p.toml:1:1: step #1: name: missing"},
      {"[[step]]\nname = 1\nrun = 'x'\n", "step #1: name: must be a string"},
      {"[[step]]\nname = ''\nrun = 'x'\n", "step #1: name: must not be empty"},
      {"[[step]]\nname = 's'\n", "p.toml:1:1: step 's': has neither run nor cmd"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncmd = ['x']\n", "step 's': has both run and cmd"},
      {"[[step]]\nname = 's'\ncmd = []\n", "step 's': cmd: must not be empty"},
      {"[[step]]\nname = 's'\ncmd = ['a', 1]\n", "step 's': cmd: items must be strings"},
      {"[[step]]\nname = 's'\nrun = 'x'\nrn = 'y'\n", "p.toml:4:6: step 's': rn: unknown key"},
      {"[[step]]\nname = 's'\nrun = 'x'\nforeach = { a = [] }\n", "foreach.a: must not be empty"},
      {"[[step]]\nname = 's'\nrun = 'x'\nforeach = { a = 'x' }\n",
       "foreach.a: must be an array of values"},
      {"[[step]]\nname = 's'\nrun = 'x'\nforeach = { a = [[1]] }\n",
       "foreach.a: items must be strings, integers, floats or booleans, not an array"},
      {"[[step]]\nname = 's'\nrun = 'x'\nforeach = { cores = [1] }\n",
       "foreach.cores: 'cores' is reserved"},
      {"[[step]]\nname = 's'\nrun = 'x'\nforeach = { 'a-b' = [1] }\n",
       "foreach.a-b: 'a-b' has a character outside"},
      {"[[step]]\nname = 's'\nrun = 'x'\ninputs = { a = 1 }\n",
       "step 's': inputs.a: must be a string or an array of strings, not an integer"},
      {"[[step]]\nname = 's'\nrun = 'x'\ninputs = { a = '' }\n", "inputs.a: a path must not be"},
      {"[[step]]\nname = 's'\nrun = 'x'\ninputs = { a = ['x', 2] }\n",
       "inputs.a: items must be strings"},
      {"[[step]]\nname = 's'\nrun = 'x'\ninputs = 'a'\n", "step 's': inputs: must be a table"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['o', 'o']\n", "outputs: 'o' is listed twice"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['a/b']\n", "outputs: 'a/b' has a character"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = 'o'\n", "outputs: must be an array"},
      {"[[step]]\nname = 's'\nrun = 'x'\nparams = { d = 1979-05-27 }\n",
       "params.d: must be a string, integer, float or boolean, not a date or time"},
      {"[[step]]\nname = 's'\nrun = 'x'\nparams = { a = [1] }\n", "params.a: must be a string"},
      {"[[step]]\nname = 's'\nrun = 'x'\ntools = ['sort']\n",
       "tools: 'sort' is not defined by a [tools.sort] table"},
      {"[tools.sort]\nversion = ['a']\n[[step]]\nname = 's'\nrun = 'x'\ntools = ['sort', 'sort']\n",
       "tools: 'sort' is listed twice"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncores = -1\n",
       "p.toml:4:9: step 's': cores: -1 is out of range [0, 65536]"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncores = 0\ntasks = 2\n",
       "step 's': cores: 0 (no core of its own: one task, unbound, on the node berth runs on) "
       "cannot go with tasks; give cores = 1 or more"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncores = 0\ngpus = 0.5\n", "cannot go with gpus"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncores = 0\nnodes = 1\n", "cannot go with nodes"},
      {"[defaults]\ncores = 0\n[[step]]\nname = 's'\nrun = 'x'\ntasks = 4\n",
       "step 's': cores: 0 (no core of its own"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncores = '2'\n", "cores: must be an integer, not a string"},
      {"[[step]]\nname = 's'\nrun = 'x'\ngpus = -1\n", "gpus: -1 is out of range"},
      {"[[step]]\nname = 's'\nrun = 'x'\ngpus = 1.5\n", "a share spans one device"},
      {"[[step]]\nname = 's'\nrun = 'x'\ngpus = -0.5\n", "a share spans one device"},
      {"[[step]]\nname = 's'\nrun = 'x'\ngpus = 0.0005\n", "counted in thousandths"},
      {"[[step]]\nname = 's'\nrun = 'x'\ngpus = nan\n", "a share spans one device"},
      {"[[step]]\nname = 's'\nrun = 'x'\ngpus = '1'\n",
       "gpus: must be a GPU count or a share of one, not a string"},
      {"[[step]]\nname = 's'\nrun = 'x'\ntasks = 0\n", "tasks: 0 is out of range"},
      {"[[step]]\nname = 's'\nrun = 'x'\nnodes = 0\n", "nodes: 0 is out of range"},
      {"[[step]]\nname = 's'\nrun = 'x'\nmemory_cap_mb = 0\n", "memory_cap_mb: 0 is out of range"},
      {"[[step]]\nname = 's'\nrun = 'x'\nretries = -1\n", "retries: -1 is out of range [0, 100]"},
      {"[[step]]\nname = 's'\nrun = 'x'\nretries = '2'\n", "retries: must be an integer"},
      {"[[step]]\nname = 's'\nrun = 'x'\ntimeout = 30\n", "timeout: must be a string"},
      {"[[step]]\nname = 's'\nrun = 'x'\ntimeout = '30 m'\n",
       "p.toml:4:11: step 's': timeout: \"30 m\": expected a positive duration"},
      {"[[step]]\nname = 's'\nrun = 'x'\ntimeout = '0s'\n", "timeout: \"0s\": must be at least 1ms"},
      {"[[step]]\nname = 's'\nrun = 'x'\ncanonical = { o = 'bytes' }\n",
       "p.toml:4:19: step 's': canonical.o: names no output of this step"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['o']\ncanonical = { o = 'sorted' }\n",
       "p.toml:5:19: step 's': canonical.o: canonical form \"sorted\""},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['o']\ncanonical = { o = 'command:' }\n",
       "p.toml:5:19: step 's': canonical.o: canonical form \"command:\": no command"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['p/']\ncanonical = { p = 'json' }\n",
       "p.toml:5:19: step 's': canonical.p: 'p' is a directory output"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['p', 'p/']\n", "outputs: 'p' is listed twice"},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['a/b/']\n", "outputs: "},
      {"[[step]]\nname = 's'\nrun = 'x'\noutputs = ['/']\n", "outputs: "},
      {"[[step]]\nname = 's'\nrun = 'x'\nenv = { '1X' = 'a' }\n",
       "env.1X: not a valid environment variable name"},
      {"[[step]]\nname = 's'\nrun = 'x'\nenv = { X = 1 }\n", "env.X: must be a string"},
      {"[[step]]\nname = 'a'\nrun = 'x'\n[[step]]\nname = 'b'\nrun = 'y'\nextra = 1\n",
       "p.toml:7:9: step 'b': extra: unknown key"},
  };
  for (const Case& c : cases) {
    auto r = parse_pipeline(c.text, "p.toml");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput) << c.text;
    EXPECT_NE(r.error().message().find(c.want), std::string::npos)
        << "text:\n"
        << c.text << "\nwant: " << c.want << "\ngot:  " << r.error().message();
    EXPECT_EQ(r.error().message().rfind("p.toml", 0), 0u) << r.error().message();
  }
}

// "[[step]] ... foreach = { k = [0, 1, ..., n - 1] }": one key of n values.
std::string one_key_of(size_t n, const std::string& name = "s-{k}") {
  std::string values;
  values.reserve(n * 8);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) values += ',';
    values += std::to_string(i);
  }
  return "[[step]]\nname = '" + name + "'\nrun = 'echo {k}'\nforeach = { k = [" + values +
         "] }\n";
}

// One key may have as many values as its table may have steps (spec 04 §3.1), not
// the 65,536 items any other array may have.
TEST(PipelineFile, AForeachKeyMayHaveAsManyValuesAsATableMayHaveSteps) {
  auto pf = parse_pipeline(one_key_of(100000), "p.toml");
  ASSERT_TRUE(pf.ok()) << pf.error().message();
  const auto& values = pf->steps.at(0).foreach.at("k");
  ASSERT_EQ(values.size(), 100000u);
  EXPECT_EQ(values.front(), "0");
  EXPECT_EQ(values.back(), "99999");

  auto most = parse_pipeline(one_key_of(kMaxExpandedSteps), "p.toml");
  ASSERT_TRUE(most.ok()) << most.error().message();
  EXPECT_EQ(most->steps.at(0).foreach.at("k").size(), kMaxExpandedSteps);
}

TEST(PipelineFile, AForeachKeyPastTheSpecsLimitIsRefusedNamingFileStepAndKey) {
  auto pf = parse_pipeline(one_key_of(kMaxExpandedSteps + 1), "big.toml");
  ASSERT_FALSE(pf.ok());
  EXPECT_EQ(pf.error().code(), Errc::kInvalidInput);
  EXPECT_EQ(pf.error().message(),
            "big.toml:4:17: step 's-{k}': foreach.k: 1000001 values; a table expands to at "
            "most 1000000 steps");
}

TEST(PipelineFile, NameRules) {
  EXPECT_FALSE(step_name_problem("count-a.b+c_1"));
  EXPECT_TRUE(step_name_problem(""));
  EXPECT_TRUE(step_name_problem(".hidden"));
  EXPECT_TRUE(step_name_problem("a/b"));
  EXPECT_TRUE(step_name_problem("a b"));
  EXPECT_TRUE(step_name_problem("@a"));
  EXPECT_FALSE(item_name_problem("in_1-x"));
  EXPECT_TRUE(item_name_problem("a.b"));
  EXPECT_FALSE(foreach_key_problem("sample_2"));
  EXPECT_TRUE(foreach_key_problem("param"));
  EXPECT_TRUE(foreach_key_problem("a.b"));
}

TEST(PipelineFile, CanonicalFormsAreStoredByTheirCanonicalName) {
  auto r = parse_pipeline(
      "[[step]]\nname='s'\nrun='x'\noutputs=['a','b','c']\n"
      "canonical={a='bytes', b='lines-sorted', c='json'}\n",
      "p.toml");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->steps[0].canonical.at("b"), "lines-sorted");
  auto words = parse_pipeline(
      "[[step]]\nname='s'\nrun='x'\noutputs=['o']\ncanonical={o='command:sort -u'}\n", "p.toml");
  auto json = parse_pipeline(
      "[[step]]\nname='s'\nrun='x'\noutputs=['o']\ncanonical={o='command:[\"sort\",\"-u\"]'}\n",
      "p.toml");
  ASSERT_TRUE(words.ok()) << words.error().message();
  ASSERT_TRUE(json.ok()) << json.error().message();
  EXPECT_EQ(words->steps[0].canonical.at("o"), json->steps[0].canonical.at("o"));
}

TEST(PipelineFile, OversizedFileIsRefusedBeforeParsing) {
  std::string big(kMaxPipelineFileBytes + 1, '#');
  auto r = parse_pipeline(big, "p.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("larger than"), std::string::npos);
}

}  // namespace
}  // namespace berth::pipeline
