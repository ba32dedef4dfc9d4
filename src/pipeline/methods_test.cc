#include "pipeline/methods.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace berth::pipeline {
namespace {

std::string row(const std::string& engine, const std::string& platform, int outputs = 1) {
  std::string outs;
  for (int i = 0; i < outputs; ++i) {
    outs += fmt::format("{}\"o{}\":{{\"object\":\"x\"}}", i ? "," : "", i);
  }
  return fmt::format(R"({{"outputs":{{{}}},"provenance":{{"engine_version":"{}","platform":"{}",)"
                     R"("tools":{{"sort":"sort (GNU coreutils) 9.1\nmore"}}}}}})",
                     outs, engine, platform);
}

TEST(Methods, OneEngineOnePlatform) {
  auto t = methods_paragraph("p", {row("berth 1", "Linux x86_64"), row("berth 1", "Linux x86_64")});
  EXPECT_NE(t.find("The 2 output(s) of pipeline 'p' were computed with berth 1 on Linux x86_64, "
                   "using sort (sort (GNU coreutils) 9.1)."),
            std::string::npos)
      << t;
}

TEST(Methods, NamesEveryDistinctEngineAndPlatform) {
  // A mixed cluster: an ARM workstation beside x86 nodes, one worker on an older berth.
  auto t = methods_paragraph("p", {row("berth 2", "Linux x86_64", 3), row("berth 1", "Linux aarch64"),
                                   row("berth 2", "Linux x86_64")});
  EXPECT_NE(t.find("berth 1 (1 output) and berth 2 (4 outputs)"), std::string::npos) << t;
  EXPECT_NE(t.find("Linux aarch64 (1 output) and Linux x86_64 (4 outputs)"), std::string::npos) << t;
}

TEST(Methods, NamesTheGpuModelsTheOutputsRanOn) {
  auto gpu = [](const std::string& model) {
    return fmt::format(
        R"({{"outputs":{{"o":{{"object":"x"}}}},"provenance":{{"engine_version":"b","platform":"p",)"
        R"("gpu_devices":[{{"id":"0","model":"{}","uuid":"GPU-1","driver":"580.159.04"}}]}}}})",
        model);
  };
  auto t = methods_paragraph("p", {gpu("NVIDIA H100 80GB HBM3"), gpu("NVIDIA H100 80GB HBM3"),
                                   row("b", "p")});
  EXPECT_NE(t.find(" GPUs used: NVIDIA H100 80GB HBM3 (driver 580.159.04)."), std::string::npos)
      << t;
  // No GPU step: nothing said of GPUs.
  EXPECT_EQ(methods_paragraph("p", {row("b", "p")}).find("GPU"), std::string::npos);
}

TEST(Methods, ThreeAreListedWithCommas) {
  auto t = methods_paragraph("p", {row("a", "x"), row("b", "x"), row("c", "x")});
  EXPECT_NE(t.find("a (1 output), b (1 output) and c (1 output)"), std::string::npos) << t;
}

TEST(Methods, UnreadableRowsAreCountedNotHidden) {
  auto t = methods_paragraph("p", {row("a", "x"), "not json", R"({"outputs":{}})"});
  EXPECT_NE(t.find("The provenance of 2 step(s) could not be read"), std::string::npos) << t;
  EXPECT_NE(t.find("The 1 output(s)"), std::string::npos) << t;
}

}  // namespace
}  // namespace berth::pipeline
