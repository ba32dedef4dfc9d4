// The results directory's manifest (results_manifest.h): its codec, a directory
// claimed, results of removed steps removed and nothing else.
#include "pipeline/results_manifest.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "util/files.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

TEST(ResultsManifest, RoundTripsAndSkipsUnsafeOrUnknownLines) {
  ResultsManifest m = parse_results_manifest(
      "# comment\npipeline /p/pipeline.toml\nresult a/o\nresult ../x/o\nresult b\n"
      "result c/./o\nlater-keyword z\nresult d/tree\n");
  EXPECT_EQ(m.pipeline, "/p/pipeline.toml");
  EXPECT_EQ(m.results, (std::vector<std::string>{"a/o", "d/tree"}));
  ResultsManifest again = parse_results_manifest(results_manifest_text(m));
  EXPECT_EQ(again.pipeline, m.pipeline);
  EXPECT_EQ(again.results, m.results);
}

class ResultsDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/berth-results-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/results";
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(dir_ + "/" + rel).parent_path());
    std::ofstream(dir_ + "/" + rel) << text;
  }
  static StepRecord step(const std::string& name, StepState state) {
    StepRecord r;
    r.name = name;
    r.state = state;
    r.outputs["o"] = {};
    return r;
  }
  std::string root_, dir_;
};

TEST_F(ResultsDirTest, ClaimsAnUnownedDirectoryAndRefusesAnotherPipeline) {
  ASSERT_TRUE(claim_results_dir(dir_, "/p/pipeline.toml", false).ok());
  EXPECT_FALSE(fs::exists(dir_)) << "a check alone writes nothing";
  ASSERT_TRUE(claim_results_dir(dir_, "/p/pipeline.toml", true).ok());
  EXPECT_EQ(parse_results_manifest(*files::read_file(dir_ + "/.berth-results")).pipeline,
            "/p/pipeline.toml");
  EXPECT_TRUE(claim_results_dir(dir_, "/p/pipeline.toml", true).ok());
  auto other = claim_results_dir(dir_, "/p/other.toml", false);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), Errc::kInvalidInput);
  for (const char* needle : {"/p/pipeline.toml", "/p/other.toml", "--results"}) {
    EXPECT_NE(other.error().message().find(needle), std::string::npos) << needle;
  }
}

TEST_F(ResultsDirTest, AWholeRunRemovesWhatItWroteOfStepsNoLongerThere) {
  ASSERT_TRUE(claim_results_dir(dir_, "/p/pipeline.toml", true).ok());
  for (const char* s : {"a", "b", "c"}) write(std::string(s) + "/o", s);
  RunReport first;
  for (const char* s : {"a", "b", "c"}) first.steps.push_back(step(s, StepState::kExecuted));
  tidy_results_dir(dir_, "/p/pipeline.toml", first, true, nullptr);
  EXPECT_TRUE(first.notices.empty());
  write("b/notes.txt", "mine");
  write("mine.txt", "mine");

  // b and c are gone from the pipeline; a targeted run leaves them.
  RunReport targeted;
  targeted.steps.push_back(step("a", StepState::kCached));
  tidy_results_dir(dir_, "/p/pipeline.toml", targeted, false, nullptr);
  EXPECT_TRUE(fs::exists(dir_ + "/c/o"));

  RunReport whole = targeted;
  std::vector<std::string> said;
  tidy_results_dir(dir_, "/p/pipeline.toml", whole, true,
                   [&said](std::string_view m) { said.emplace_back(m); });
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("2 step(s)"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find(dir_ + "/b/, " + dir_ + "/c/"), std::string::npos) << said[0];
  EXPECT_EQ(whole.notices, said);
  EXPECT_FALSE(fs::exists(dir_ + "/b/o"));
  EXPECT_FALSE(fs::exists(dir_ + "/c"));
  EXPECT_TRUE(fs::exists(dir_ + "/b/notes.txt"));
  EXPECT_TRUE(fs::exists(dir_ + "/mine.txt"));
  EXPECT_TRUE(fs::exists(dir_ + "/a/o"));
  EXPECT_EQ(parse_results_manifest(*files::read_file(dir_ + "/.berth-results")).results,
            std::vector<std::string>{"a/o"});
}

TEST_F(ResultsDirTest, AFailedStepsEarlierResultStaysNamed) {
  ASSERT_TRUE(claim_results_dir(dir_, "/p/pipeline.toml", true).ok());
  write("a/o", "a");
  RunReport first;
  first.steps.push_back(step("a", StepState::kExecuted));
  tidy_results_dir(dir_, "/p/pipeline.toml", first, true, nullptr);
  RunReport failed;
  failed.steps.push_back(step("a", StepState::kFailed));
  tidy_results_dir(dir_, "/p/pipeline.toml", failed, true, nullptr);
  EXPECT_TRUE(fs::exists(dir_ + "/a/o"));
  EXPECT_EQ(parse_results_manifest(*files::read_file(dir_ + "/.berth-results")).results,
            std::vector<std::string>{"a/o"});
}

}  // namespace
}  // namespace berth::pipeline
