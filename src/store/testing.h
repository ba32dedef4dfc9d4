// Test-only helpers for store_test: a scratch directory removed at the end of a test.
#pragma once

#include <stdlib.h>

#include <filesystem>
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

}  // namespace berth::store::testing
