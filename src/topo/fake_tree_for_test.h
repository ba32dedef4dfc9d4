// FakeTree: a temporary directory laid out like "/", for tests of the readers that
// take a root (test-only; header-only so the library's source glob skips it).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "util/idset.h"

namespace berth::topo::testing {

class FakeTree {
 public:
  FakeTree() {
    char tmpl[] = "/tmp/berth-topo-test.XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    EXPECT_NE(d, nullptr);
    root_ = d ? d : "/nonexistent";
  }
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return root_; }

  // Writes `content` at absolute path `abs` ("/proc/meminfo") under the root.
  void write(const std::string& abs, const std::string& content) const {
    std::filesystem::path p = root_ + abs;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  void mkdir(const std::string& abs) const { std::filesystem::create_directories(root_ + abs); }

  // A node's CPUs: `online` and, for each of them, the threads sharing its core as
  // `siblings(cpu)` written to thread_siblings_list (or core_cpus_list).
  void cpus(const std::vector<int>& online, const std::function<std::vector<int>(int)>& siblings,
            const std::string& file = "thread_siblings_list") const {
    write("/sys/devices/system/cpu/online", idset::encode_ids(online) + "\n");
    for (int c : online) {
      write("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/" + file,
            idset::encode_ids(siblings(c)) + "\n");
    }
  }

 private:
  std::string root_;
};

// The ids lo..hi.
inline std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

}  // namespace berth::topo::testing
