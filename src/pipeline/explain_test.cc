#include "pipeline/explain.h"

#include <gtest/gtest.h>

namespace berth::pipeline {
namespace {

// A basis as step_basis() writes one (basis.h).
std::string basis(const std::string& command, const std::string& params = "",
                  const std::string& config = "", const std::string& recipe = "r1") {
  std::string b =
      R"({"command":")" + command + R"(","recipe":")" + recipe + R"(","inputs":{},"tools":{})";
  if (!params.empty()) b += R"(,"params":)" + params;
  if (!config.empty()) b += R"(,"config":)" + config;
  return b + "}";
}

std::string why(const std::string& before, const std::string& now) {
  PreviousBases p;
  p.given = {{"s", before}};
  return Explainer(p).why("s", now);
}

TEST(Explain, NamesTheParamOrConfigValueThatChangedOldToNew) {
  EXPECT_EQ(why(basis("echo 0.1", R"({"rate":"0.1"})"), basis("echo 0.01", R"({"rate":"0.01"})")),
            "param 'rate' changed (0.1 -> 0.01)");
  EXPECT_EQ(
      why(basis("run 100", "", R"({"steps":"100"})"), basis("run 200", "", R"({"steps":"200"})")),
      "config 'steps' changed (100 -> 200)");
  EXPECT_EQ(why(basis("x", R"({"a":"1"})"), basis("x", R"({"b":"2"})", "", "r2")),
            "param 'b' is new (2); param 'a' was removed");
  // No value named: the command's own edit.
  EXPECT_EQ(why(basis("echo 1"), basis("echo 2")), "its command changed");
  EXPECT_EQ(why(basis("x", R"({"n":"1"})", "", "r1"), basis("x", R"({"n":"1"})", "", "r2")),
            "its params, environment or outputs changed");
  // An earlier basis without the param (it did not vary then): the param is new, and
  // says why the command changed.
  EXPECT_EQ(why(basis("echo 1"), basis("echo 2", R"({"n":"2"})")), "param 'n' is new (2)");
  EXPECT_EQ(why(basis("x"), basis("x")),
            "its result is not in the store (never published, or removed)");
}

}  // namespace
}  // namespace berth::pipeline
