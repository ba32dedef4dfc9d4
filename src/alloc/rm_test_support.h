// Test support for the resource-manager sources: a scratch directory, an Input built
// from a test's own Env, and a one-line summary of parsed nodes that tables can state.
// Test code only.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "alloc/node.h"
#include "alloc/source.h"
#include "util/files.h"

namespace berth::alloc::testing {

// A fresh directory under the test temp dir, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = ::testing::TempDir() + "berth-rm-XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << tmpl;
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `text` to `name` in the directory and returns the file's path.
  std::string write(const std::string& name, std::string_view text) const {
    std::string p = path_ + "/" + name;
    auto r = files::write_file_atomic(p, text);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return p;
  }

 private:
  std::string path_;
};

// Everything a discover_* call needs, owned in one place.
struct Inputs {
  Env env;
  Options options;
  LocalHost local{"here", {}, 1, {}};
  Input input() const { return Input{env, options, local}; }
};

// "a:2 b:1": each node's name and slots, in order.
inline std::string summary(const std::vector<NodeSpec>& nodes) {
  std::string out;
  for (const NodeSpec& n : nodes) {
    if (!out.empty()) out += ' ';
    out += n.name + ":" + std::to_string(n.slots);
  }
  return out;
}

// True when every node carries the scheduler's authority over its count.
inline bool all_slots_given(const std::vector<NodeSpec>& nodes) {
  for (const NodeSpec& n : nodes) {
    if (!n.slots_given || n.slots_max != 0 || !n.user.empty() || !n.aliases.empty()) return false;
  }
  return true;
}

// A parser's result as one string: the summary, or "error: <message>".
inline std::string outcome(const Result<std::vector<NodeSpec>>& r) {
  if (!r.ok()) return "error: " + r.error().message();
  return summary(*r);
}

}  // namespace berth::alloc::testing
