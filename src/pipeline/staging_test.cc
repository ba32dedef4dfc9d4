#include "pipeline/staging.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "pipeline/leftovers.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

InputItem file(const std::string& path) {
  InputItem i;
  i.kind = InputItem::Kind::kFile;
  i.text = path;
  i.path = path;
  return i;
}

InputItem upstream(const std::string& output) {
  InputItem i;
  i.kind = InputItem::Kind::kStepOutput;
  i.output = output;
  return i;
}

TEST(Staging, ItemsKeepTheirNamesSideBySideUnlessTwoShareOne) {
  std::map<std::string, Input> in;
  in["bam"] = Input{"bam", false, {file("data/x.bam")}};
  in["bai"] = Input{"bai", false, {file("/idx/x.bam.bai")}};
  in["parts"] = Input{"parts", true, {upstream("counts"), upstream("counts"), file("d/")}};
  auto layout = staged_layout(in);
  EXPECT_EQ(layout["bam"], (std::vector<std::string>{"in/x.bam"}));
  EXPECT_EQ(layout["bai"], (std::vector<std::string>{"in/x.bam.bai"}));
  EXPECT_EQ(layout["parts"], (std::vector<std::string>{"in/parts.0/counts", "in/parts.1/counts",
                                                       "in/file"}));
}

TEST(Staging, ReleaseSaysWhatTheStepLeft) {
  std::string tmpl = (fs::temp_directory_path() / "berth-staging.XXXXXX").string();
  fs::path root = ::mkdtemp(tmpl.data());
  {
    Staging staging(root.string());
    auto dir = staging.acquire();
    ASSERT_TRUE(dir.ok()) << dir.error().message();
    fs::path d = *dir;
    std::ofstream(d / "plot.png") << "png";
    fs::create_directories(d / "tmp" / "deep");
    std::ofstream(d / "out" / "table.csv") << "t";
    std::ofstream(d / "out" / "extra.csv") << "x";
    std::ofstream(d / "in" / "a.txt") << "a";
    std::ofstream(d / "prep.sh") << "p";
    std::vector<std::string> left;
    staging.release(*dir, &left);
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"out/extra.csv", "out/table.csv", "plot.png",
                                              "prep.sh", "tmp/"}));
    EXPECT_EQ(undeclared_files(left, {"table.csv"}, {"prep.sh"}),
              (std::vector<std::string>{"out/extra.csv", "plot.png", "tmp/"}));
    EXPECT_TRUE(fs::is_empty(d / "in"));
    EXPECT_TRUE(fs::is_empty(d / "out"));
    auto notice = leftovers_notice(undeclared_files(left, {"table.csv"}, {"prep.sh"}), 2);
    ASSERT_TRUE(notice.has_value());
    EXPECT_EQ(*notice,
              "left 3 file(s) it did not declare as outputs, removed with its staging "
              "directory: out/extra.csv, plot.png and 1 more (name one in `outputs` to keep it)");
    EXPECT_FALSE(leftovers_notice({}).has_value());
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace berth::pipeline
