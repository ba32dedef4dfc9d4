// read_step_row: what a cache hit takes from a row, and what makes a row unusable.
#include "pipeline/step_row.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

constexpr const char* kRow =
    R"({"version":1,"key":"k","step":"s","outputs":{"o":{"object":"sha256:aa","form":"bytes",)"
    R"("canonical":"sha256:aa"},"p":{"object":"sha256:bb","form":"json","canonical":"sha256:cc"}},)"
    R"("provenance":{"command":"cp a b","inputs":{"src":[{"file":"in/1.txt"}]},"params":{},)"
    R"("host":"n1","cores":"0-1","worker":"w3","gpus":0,"elapsed_s":0.5}})";

TEST(StepRow, ReadsEveryOutputRecordAndWhoComputedIt) {
  auto d = read_step_row(kRow);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->outputs.size(), 2u);
  EXPECT_EQ(d->outputs["o"]["object"], "sha256:aa");
  EXPECT_EQ(d->outputs["p"]["form"], "json");
  EXPECT_EQ(d->outputs["p"]["canonical"], "sha256:cc");
  EXPECT_TRUE(d->malformed.empty());
  EXPECT_EQ(d->host, "n1");
  EXPECT_EQ(d->cores, "0-1");
  EXPECT_EQ(d->worker, "w3");
}

TEST(StepRow, IgnoresWhatIsNotRead) {
  // The same names elsewhere (an input called "host", a nested "object") are not taken.
  auto d = read_step_row(
      R"({"outputs":{"o":{"object":{"x":"sha256:zz"},"form":"bytes"}},)"
      R"("provenance":{"inputs":{"host":"h2"},"cores":7},"host":"top"})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->outputs["o"].count("object"), 0u);
  EXPECT_EQ(d->outputs["o"]["form"], "bytes");
  EXPECT_EQ(d->host, "");
  EXPECT_EQ(d->cores, "");  // a number, not a string
}

TEST(StepRow, ReadsTheLogAtTheTopOnly) {
  auto d = read_step_row(R"({"outputs":{},"provenance":{"log":"sha256:p"},"log":"sha256:ll"})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->log, "sha256:ll");
  d = read_step_row(R"({"outputs":{},"provenance":{"log":"sha256:p"},"log":7})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->log, "");
  d = read_step_row(kRow);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->log, "");  // a row written before logs were kept
}

TEST(StepRow, MarksOutputsWhoseRecordIsNotAnObject) {
  auto d = read_step_row(R"({"outputs":{"a":"sha256:aa","b":[1],"c":{"object":"x"},"d":null}})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->malformed, (std::set<std::string>{"a", "b", "d"}));
  EXPECT_EQ(d->outputs["c"]["object"], "x");
}

TEST(StepRow, RefusesRowsWithoutAnOutputsObject) {
  for (const char* bad : {"", "   ", "[]", R"("outputs")", "{}", R"({"outputs":3})",
                          R"({"outputs":[]})", R"({"outputs":{}, "outputs":1})",
                          R"({"outputs":{"o":{}}})"
                          "trailing",
                          R"({"outputs":{"o":{"object":"x"})", "\xff\xfe", "{\"outputs\":{}}{}"}) {
    EXPECT_FALSE(read_step_row(bad)) << bad;
  }
  // An empty outputs object is a row with no outputs, which is well formed.
  EXPECT_TRUE(read_step_row(R"({"outputs":{}})"));
}

}  // namespace
}  // namespace berth::pipeline
