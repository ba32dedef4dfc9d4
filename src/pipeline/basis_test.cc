// The basis's input and tool objects (basis.h): text exactly as nlohmann dumps the same
// JSON, since a dry run compares a basis with the last run's byte for byte.
#include "pipeline/basis.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/sha256.h"

namespace berth::pipeline {
namespace {

TEST(Basis, InputsAreWhatNlohmannWouldDump) {
  BasisInputs none;
  EXPECT_EQ(none.finish(), "{}");

  BasisInputs b;
  b.input("a");
  b.item("data/x.csv", "bytes sha256:00");
  b.item("@s/o", "lines-sorted sha256:11");
  b.input("empty");
  b.input("q\"uote");
  b.item("t\\x", "bytes sha256:22");
  using J = nlohmann::ordered_json;
  J j;
  j["a"] = J::array({J::array({"data/x.csv", "bytes sha256:00"}),
                     J::array({"@s/o", "lines-sorted sha256:11"})});
  j["empty"] = J::array();
  j["q\"uote"] = J::array({J::array({"t\\x", "bytes sha256:22"})});
  EXPECT_EQ(b.finish(), j.dump());
}

TEST(Basis, ToolsAreNamedWithAShortHashOfTheirVersion) {
  ToolVersions versions{{"sort", "sort (GNU coreutils) 9.1"}};
  nlohmann::ordered_json j;
  j["sort"] = sha256_hex("sort (GNU coreutils) 9.1").substr(0, 16);
  j["unread"] = sha256_hex("").substr(0, 16);
  EXPECT_EQ(basis_tools({"sort", "unread"}, versions), j.dump());
  EXPECT_EQ(basis_tools({}, versions), "{}");
}

}  // namespace
}  // namespace berth::pipeline
