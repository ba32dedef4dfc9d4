#include "pipeline/beside.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "pipeline/pipeline_file.h"
#include "pipeline/staging.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

class BesideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "berth-beside.XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    fs::create_directories(dir_ / "scripts");
    fs::create_directories(dir_ / "data");
    for (const char* f : {"scripts/a.py", "prep.sh", "data/x.csv", "in/y.txt"}) {
      fs::create_directories((dir_ / f).parent_path());
      std::ofstream(dir_ / f) << "x\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  Graph expand_here(const std::string& text) {
    auto pf = parse_pipeline(text, (dir_ / "p.toml").string());
    EXPECT_TRUE(pf.ok()) << pf.error().message();
    auto g = expand(*pf, [](const std::string&) { return true; });
    EXPECT_TRUE(g.ok()) << g.error().message();
    return std::move(*g);
  }
  static std::vector<std::string> beside(const Step& s) {
    std::vector<std::string> out;
    for (const auto& [name, in] : s.inputs) {
      if (!beside_path_of(name).empty()) out.push_back(name + "=" + in.items[0].text);
    }
    return out;
  }
  fs::path dir_;
};

TEST_F(BesideTest, ACommandsFilesBesideThePipelineAreItsInputs) {
  Graph g = expand_here(R"(
[[step]]
name = "s"
run = "python3 ./scripts/a.py data/x.csv | sh 'prep.sh'>log; cat missing.txt in/y.txt /etc/hosts"

[[step]]
name = "c-{f}"
foreach = { f = ["prep.sh", "nothing.sh"] }
cmd = ["sh", "{f}", "--opt=data/x.csv"]

[[step]]
name = "plain-{i}"
foreach = { i = [1, 2] }
run = "echo {i} scripts"
)");
  // Normalised, distinct, sorted; a missing file, one under in/, an absolute path, an
  // option's value: none.
  EXPECT_EQ(beside(g.steps[0]),
            (std::vector<std::string>{"./data/x.csv=data/x.csv", "./prep.sh=prep.sh",
                                      "./scripts/a.py=scripts/a.py"}));
  EXPECT_EQ(g.steps[0].inputs.at("./prep.sh").items[0].path, (dir_ / "prep.sh").string());
  EXPECT_EQ(beside(g.steps[1]), (std::vector<std::string>{"./prep.sh=prep.sh"}));
  EXPECT_TRUE(beside(g.steps[2]).empty());
  EXPECT_TRUE(beside(g.steps[3]).empty());
}

TEST_F(BesideTest, ACommandCanonicalisersScriptIsAnInputToo) {
  Graph g = expand_here(
      "[[step]]\nname = 's'\nrun = 'x > {out.o}'\noutputs = ['o']\n"
      "canonical = { o = 'command:python3 scripts/a.py --strict' }\n");
  EXPECT_TRUE(BesideFiles::may_name_files(*g.steps[0].table));
  EXPECT_EQ(beside(g.steps[0]), (std::vector<std::string>{"./scripts/a.py=scripts/a.py"}));
}

TEST_F(BesideTest, ATableThatCannotNameAFileIsNotScanned) {
  Graph g = expand_here("[[step]]\nname = 's-{i}'\nforeach = { i = [1, 2] }\nrun = 'echo {i}'\n");
  EXPECT_FALSE(BesideFiles::may_name_files(*g.steps[0].table));
  Graph h = expand_here("[[step]]\nname = 's-{f}'\nforeach = { f = ['a.py'] }\nrun = 'x {f}'\n");
  EXPECT_TRUE(BesideFiles::may_name_files(*h.steps[0].table));
}

TEST_F(BesideTest, StagedPathsAreMadeWhereTheCommandLooks) {
  fs::path stage = dir_ / "stage";
  EXPECT_EQ(staged_path(stage.string(), "scripts/deep/a.py"),
            (stage / "scripts/deep/a.py").string());
  EXPECT_TRUE(fs::is_directory(stage / "scripts/deep"));
  Graph g = expand_here("[[step]]\nname = 's'\nrun = 'sh prep.sh scripts/a.py'\n");
  EXPECT_EQ(staged_beside(g.steps[0]), (std::vector<std::string>{"prep.sh", "scripts/"}));
}

}  // namespace
}  // namespace berth::pipeline
