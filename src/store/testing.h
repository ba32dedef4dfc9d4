// Test-only helpers: a scratch directory removed at the end of a test, and the size of
// the process's descriptor table.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace berth::store::testing {

class TempDir {
 public:
  explicit TempDir(const char* base = "/tmp") {
    std::string tmpl = std::string(base) + "/berth-store-test.XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    // Stored copies are 0444 in 0755 directories, so remove_all can unlink them.
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// How many descriptors the process's table has room for (FDSize in /proc/self/status;
// 0 when it cannot be read). It starts at 64 and doubles as more are held at once, never
// shrinking, and a table shared by threads doubles only after an RCU grace period: code
// on a hot path that holds hundreds at once shows up here.
inline int fd_table_size() {
  std::ifstream in("/proc/self/status");
  std::string word;
  while (in >> word) {
    if (word == "FDSize:") {
      int n = 0;
      in >> n;
      return n;
    }
  }
  return 0;
}

}  // namespace berth::store::testing
