#include "pipeline/graph.h"

#include <gtest/gtest.h>

#include <set>

#include "pipeline/testdata.h"

namespace berth::pipeline {
namespace {

// A file system holding exactly `files`.
FileExists only(std::set<std::string> files) {
  return [files = std::move(files)](const std::string& p) { return files.count(p) > 0; };
}
FileExists any() {
  return [](const std::string&) { return true; };
}

Result<Graph> expand_text(const std::string& text, const FileExists& exists = any(),
                          const std::string& path = "p.toml") {
  auto pf = parse_pipeline(text, path);
  if (!pf.ok()) return pf.error();
  return expand(*pf, exists);
}

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const Step& s : g.steps) out.push_back(s.name);
  return out;
}

TEST(Graph, ExpandsTheSpecExample) {
  auto g = expand_text(testdata::kSpecExample,
                       only({"w/data/a.txt", "w/data/b.txt", "w/data/c.txt"}), "w/example.toml");
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->name, "example");
  EXPECT_EQ(names(*g), (std::vector<std::string>{"count-a", "count-b", "count-c", "total"}));
  const Step& a = g->steps[0];
  EXPECT_EQ(a.bindings().at("sample"), "a");
  EXPECT_TRUE(a.shell);
  EXPECT_EQ(a.inputs.at("text").items[0].path, "w/data/a.txt");
  EXPECT_EQ(a.inputs.at("text").items[0].kind, InputItem::Kind::kFile);
  EXPECT_EQ(a.canonical.at("counts"), "lines-sorted");
  EXPECT_EQ(a.origin(), "w/example.toml:7:1: step 'count-{sample}' ('count-a')");
  EXPECT_TRUE(a.deps.empty());
  const Step& t = g->steps[3];
  EXPECT_EQ(t.deps, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(t.canonical.at("sum"), "bytes");
  ASSERT_EQ(t.inputs.at("parts").items.size(), 3u);
  EXPECT_EQ(t.inputs.at("parts").items[1].kind, InputItem::Kind::kStepOutput);
  EXPECT_EQ(t.inputs.at("parts").items[1].step, 1u);
  EXPECT_EQ(t.inputs.at("parts").items[1].output, "counts");
  EXPECT_EQ(g->find("total"), 3u);
  EXPECT_EQ(g->find("nope"), std::nullopt);
}

TEST(Graph, ADirectoryOutputHasTheTreeFormAndIsReferencedByItsName) {
  auto g = expand_text(R"(
[[step]]
name = "make"
run = "touch {out.plots}/a"
outputs = ["plots/", "log"]
[[step]]
name = "read"
inputs = { p = "@make/plots" }
run = "ls {in.p} > {out.o}"
outputs = ["o"]
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->steps[0].canonical.at("plots"), "tree");
  EXPECT_EQ(g->steps[0].canonical.at("log"), "bytes");
  EXPECT_EQ(g->steps[1].inputs.at("p").items[0].output, "plots");
  EXPECT_EQ(g->steps[1].deps, (std::vector<size_t>{0}));
}

TEST(Graph, ForeachIsACartesianProductKeysSortedValuesInOrder) {
  auto g = expand_text(R"(
[[step]]
name = "s-{z}-{a}"
foreach = { z = ["2", "1"], a = ["y", "x", "w"] }
run = "echo {a} {z}"
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  // Keys sorted (a before z), the first key slowest, values in the order given.
  EXPECT_EQ(names(*g),
            (std::vector<std::string>{"s-2-y", "s-1-y", "s-2-x", "s-1-x", "s-2-w", "s-1-w"}));
  EXPECT_EQ(g->steps[0].command()[0], (Word{{Segment::Kind::kText, "echo y 2"}}));
}

// A key of as many values as the spec allows a table (here a tenth of 10^6, so that the
// sanitizer build stays quick) expands to one step per value, in order, linearly.
TEST(Graph, OneForeachKeyOfAHundredThousandValuesExpands) {
  constexpr size_t kValues = 100000;
  std::string values;
  for (size_t i = 0; i < kValues; ++i) values += (i ? "," : "") + std::to_string(i);
  auto g = expand_text("[[step]]\nname = 's-{i}'\nforeach = { i = [" + values +
                       "] }\nrun = 'echo {i} {param.p} > {out.o}'\noutputs = ['o']\n"
                       "params = { p = 'x' }\nenv = { I = '{i}' }\n");
  ASSERT_TRUE(g.ok()) << g.error().message();
  ASSERT_EQ(g->steps.size(), kValues);
  for (size_t i : {size_t{0}, size_t{1}, size_t{54321}, kValues - 1}) {
    const Step& s = g->steps[i];
    EXPECT_EQ(s.name, "s-" + std::to_string(i));
    EXPECT_EQ(s.bindings().at("i"), std::to_string(i));
    EXPECT_EQ(s.command()[0], (Word{{Segment::Kind::kText, "echo " + std::to_string(i) + " x > "},
                                    {Segment::Kind::kOutput, "o"}}));
    EXPECT_EQ(s.env().at("I"), (Word{{Segment::Kind::kText, std::to_string(i)}}));
  }
  EXPECT_EQ(g->find("s-99999"), kValues - 1);
}

// What every step of a table has in common is the table's, held once; what differs is
// each step's own.
TEST(Graph, StepsOfOneTableShareItsPartsAndKeepTheirOwn) {
  auto g = expand_text(R"(
[[step]]
name = "a-{k}"
foreach = { k = ["1", "2"] }
run = "x {k} > {out.o}"
outputs = ["o"]
params = { p = 1 }
[[step]]
name = "b"
run = "y"
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  const Step& a1 = g->steps[0];
  const Step& a2 = g->steps[1];
  const Step& b = g->steps[2];
  EXPECT_EQ(a1.table.get(), a2.table.get());
  EXPECT_NE(a1.table.get(), b.table.get());
  EXPECT_EQ(&a1.outputs, &a2.outputs);
  EXPECT_EQ(&a1.table->params, &a2.table->params);
  EXPECT_EQ(a1.combination, 0u);
  EXPECT_EQ(a2.combination, 1u);
  EXPECT_EQ(a2.command()[0][0].value, "x 2 > ");
  EXPECT_EQ(a2.origin(), "p.toml:2:1: step 'a-{k}' ('a-2')");
  EXPECT_EQ(b.origin(), "p.toml:8:1: step 'b'");
  EXPECT_TRUE(b.bindings().empty());
  // A step copied out of its graph keeps its table.
  Step copy = [&] {
    Graph moved = std::move(*g);
    return moved.steps[1];
  }();
  EXPECT_EQ(copy.outputs, (std::vector<std::string>{"o"}));
  EXPECT_EQ(copy.params().at("p").text, "1");
  EXPECT_EQ(copy.bindings().at("k"), "2");
}

TEST(Graph, TopologicalOrderPutsProducersFirstAndKeepsFileOrderOtherwise) {
  auto g = expand_text(R"(
[[step]]
name = "late"
inputs = { x = "@early/o" }
run = "x"
[[step]]
name = "free"
run = "x"
[[step]]
name = "early"
run = "x > {out.o}"
outputs = ["o"]
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(names(*g), (std::vector<std::string>{"free", "early", "late"}));
  EXPECT_EQ(g->steps[2].deps, (std::vector<size_t>{1}));
  EXPECT_EQ(g->steps[2].inputs.at("x").items[0].step, 1u);
}

TEST(Graph, PlaceholdersInInputsAndRefsExpand) {
  auto g = expand_text(R"(
[[step]]
name = "p-{s}"
foreach = { s = ["a", "b"] }
run = "x > {out.o}"
outputs = ["o"]
[[step]]
name = "q-{s}"
foreach = { s = ["a", "b"] }
params = { dir = "in" }
inputs = { up = "@p-{s}/o", raw = ["/abs/{s}", "{param.dir}/{s}.txt"] }
cmd = ["tool", "{in.up}", "{in.raw}", "-n{param.dir}", "{s}"]
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  const Step& qb = g->steps[g->find("q-b").value()];
  EXPECT_EQ(qb.inputs.at("up").items[0].step, g->find("p-b").value());
  EXPECT_EQ(qb.inputs.at("raw").items[0].path, "/abs/b");    // absolute paths kept
  EXPECT_EQ(qb.inputs.at("raw").items[1].path, "in/b.txt");  // "." dir adds nothing
  auto command = qb.command();
  ASSERT_EQ(command.size(), 5u);
  EXPECT_EQ(command[1], (Word{{Segment::Kind::kInput, "up"}}));
  EXPECT_EQ(command[3], (Word{{Segment::Kind::kText, "-nin"}}));
  EXPECT_EQ(command[4], (Word{{Segment::Kind::kText, "b"}}));
}

TEST(Graph, ResourcesExpandOnlyInCommandsAndEnv) {
  auto g = expand_text(R"(
[[step]]
name = "r"
cores = 4
gpus = 2
tasks = 3
nodes = 1
run = "t -j{cores} -g{gpus} -n{tasks} -N{nodes}"
env = { OMP_NUM_THREADS = "{cores}" }
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->steps[0].command()[0], (Word{{Segment::Kind::kText, "t -j4 -g2 -n3 -N1"}}));
  EXPECT_EQ(g->steps[0].env().at("OMP_NUM_THREADS"), (Word{{Segment::Kind::kText, "4"}}));
  auto no_nodes = expand_text("[[step]]\nname='r'\nrun='{nodes}'\n");
  ASSERT_FALSE(no_nodes.ok());
  EXPECT_NE(no_nodes.error().message().find("run: placeholder {nodes} names nothing"),
            std::string::npos);
}

// Each bad pipeline, and what the error must say.
TEST(Graph, RejectsBadPipelinesNamingStepAndProblem) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"[[step]]\nname = 'x-{s}'\nrun = 'x'\n",
       "p.toml:2:8: step 'x-{s}': name: placeholder {s} names nothing"},
      {"[[step]]\nname = 'x-{param.a}'\nparams = { a = 1 }\nrun = 'x'\n",
       "step 'x-{param.a}': name: placeholder {param.a} names nothing"},
      {"[[step]]\nname = 'x-{s'\nrun = 'x'\n", "step 'x-{s': name: column 3: unclosed"},
      {"[[step]]\nname = 'x-{s}'\nforeach = { s = ['a b'] }\nrun = 'x'\n",
       "step 'x-{s}' ('x-a b'): name: 'x-a b' has a character outside"},
      {"[[step]]\nname = 'x'\nforeach = { s = ['a', 'b'] }\nrun = 'x'\n",
       "p.toml:1:1: step 'x': name: expands to 'x' for more than one foreach combination "
       "(use every foreach key in the name)"},
      {"[[step]]\nname = 'count-{s}'\nforeach = { s = ['a'] }\nrun = 'x'\n"
       "[[step]]\nname = 'count-a'\nrun = 'y'\n",
       "p.toml:5:1: step 'count-a': name: expands to 'count-a', which p.toml:1:1: step "
       "'count-{s}' ('count-a') also names"},
      {"[[step]]\nname = 's'\nrun = 'cat {in.x}'\n",
       "p.toml:3:7: step 's': run: placeholder {in.x} names nothing"},
      {"[[step]]\nname = 's'\nrun = 'cat > {out.o}'\n", "step 's': run: placeholder {out.o}"},
      {"[[step]]\nname = 's-{k}'\nforeach = { k = ['a'] }\nrun = '{param.p}'\n",
       "step 's-{k}' ('s-a'): run: placeholder {param.p} names nothing"},
      {"[[step]]\nname = 's'\ncmd = ['a', '{b}']\n", "step 's': cmd[1]: placeholder {b}"},
      {"[[step]]\nname = 's'\nrun = 'awk {print}'\n", "run: placeholder {print} names nothing"},
      {"[[step]]\nname = 's'\nrun = 'x}'\n", "step 's': run: column 2: lone '}'"},
      {"[[step]]\nname = 's'\nrun = 'x'\nenv = { A = '{nope}' }\n",
       "step 's': env.A: placeholder {nope}"},
      {"[[step]]\nname = 's'\ninputs = { a = '{in.b}' }\nrun = 'x'\n",
       "step 's': inputs.a: placeholder {in.b} names nothing"},
      {"[[step]]\nname = 's'\ninputs = { a = '{cores}' }\nrun = 'x'\n",
       "inputs.a: placeholder {cores} names nothing"},
      {"[[step]]\nname = 's'\ninputs = { l = ['a', 'b'] }\ncmd = ['x', '--in={in.l}']\n",
       "step 's': cmd[1]: list input {in.l} must be a whole argv word"},
      {"[[step]]\nname = 's'\ninputs = { a = '@t/o' }\nrun = 'x'\n",
       "step 's': inputs.a: '@t/o' names no step 't'"},
      {"[[step]]\nname = 't'\nrun = 'x'\noutputs = ['o']\n"
       "[[step]]\nname = 's'\ninputs = { a = '@t/p' }\nrun = 'x'\n",
       "step 's': inputs.a: '@t/p': step 't' has no output 'p' (it has: o)"},
      {"[[step]]\nname = 't'\nrun = 'x'\n[[step]]\nname = 's'\ninputs = { a = '@t/p' }\n"
       "run = 'x'\n",
       "step 't' has no output 'p' (it has: none)"},
      {"[[step]]\nname = 's-{k}'\nforeach = { k = ['', 'x'] }\ninputs = { a = '{k}' }\n"
       "run = 'x'\n",
       "step 's-{k}' ('s-'): inputs.a: '{k}' expands to an empty path"},
      {"[[step]]\nname = 's'\ninputs = { a = '@t' }\nrun = 'x'\n",
       "inputs.a: '@t' is not a reference of the form @step/output"},
      {"[[step]]\nname = 's'\ninputs = { a = '@/o' }\nrun = 'x'\n",
       "inputs.a: '@/o' is not a reference"},
      {"[[step]]\nname = 's'\ninputs = { a = '@t/' }\nrun = 'x'\n",
       "inputs.a: '@t/' is not a reference"},
      {"[[step]]\nname = 's'\ninputs = { a = '@s/o' }\nrun = 'x'\noutputs = ['o']\n",
       "p.toml: cycle: s -> s"},
      {"[[step]]\nname = 'a'\ninputs = { x = '@c/o' }\nrun = 'x'\noutputs = ['o']\n"
       "[[step]]\nname = 'b'\ninputs = { x = '@a/o' }\nrun = 'x'\noutputs = ['o']\n"
       "[[step]]\nname = 'c'\ninputs = { x = '@b/o' }\nrun = 'x'\noutputs = ['o']\n"
       "[[step]]\nname = 'd'\ninputs = { x = '@c/o' }\nrun = 'x'\n",
       "p.toml: cycle: a -> b -> c -> a (data flows left to right: each step's output is read "
       "by the next)"},
      {"[[step]]\nname = 's-{a}-{b}'\nrun = 'x'\nforeach = { a = ["
       "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"
       "], b = [0,1,2,3,4,5,6,7,8,9], c = ["
       "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"
       "], d = [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29]"
       ", e = [0,1,2,3,4,5,6,7,8,9] }\n",
       "foreach: expands the pipeline past 1000000 steps"},
  };
  for (const Case& c : cases) {
    auto r = expand_text(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(c.want), std::string::npos)
        << "text:\n"
        << c.text << "\nwant: " << c.want << "\ngot:  " << r.error().message();
  }
}

TEST(Graph, MissingInputFileIsNamedWithStepInputAndPath) {
  auto g =
      expand_text(testdata::kSpecExample, only({"w/data/a.txt", "w/data/c.txt"}), "w/example.toml");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), Errc::kNotFound);
  EXPECT_EQ(g.error().message(),
            "w/example.toml:12:19: step 'count-{sample}' ('count-b'): inputs.text: input file "
            "w/data/b.txt does not exist");
}

// Every missing file is named in one error, not one per run.
TEST(Graph, EveryMissingInputFileIsNamedAtOnce) {
  auto g = expand_text(testdata::kSpecExample, only({"w/data/b.txt"}), "w/example.toml");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), Errc::kNotFound);
  EXPECT_EQ(g.error().message(),
            "2 input files do not exist: w/example.toml:12:19: step 'count-{sample}' "
            "('count-a'): inputs.text: input file w/data/a.txt does not exist; "
            "w/example.toml:12:19: step 'count-{sample}' ('count-c'): inputs.text: input file "
            "w/data/c.txt does not exist");
  std::string many = "[[step]]\nname = 's-{i}'\nforeach = { i = [";
  for (int i = 0; i < 25; ++i) many += (i ? ", " : "") + std::to_string(i);
  many += "] }\ninputs = { x = 'd/{i}' }\nrun = 'x'\n";
  auto m = expand_text(many, only({}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message().rfind("25 input files do not exist: ", 0), 0u)
      << m.error().message();
  EXPECT_NE(m.error().message().find("d/9 does not exist; and 15 more"), std::string::npos)
      << m.error().message();
}

TEST(Graph, DepsAreDistinctWhenOneStepFeedsSeveralInputs) {
  auto g = expand_text(R"(
[[step]]
name = "a"
run = "x"
outputs = ["o", "p"]
[[step]]
name = "b"
inputs = { x = "@a/o", y = ["@a/p", "@a/o"] }
run = "x"
)");
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->steps[1].deps, (std::vector<size_t>{0}));
}

}  // namespace
}  // namespace berth::pipeline
