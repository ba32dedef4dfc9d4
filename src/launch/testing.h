// For launch's tests against real processes: where the helper programs of tests/helpers
// are (STYLE.md habit 8), found through BERTH_HELPERS_DIR (set by ctest) or
// ../../helpers from the test binary; and a count of open descriptors, for leaks.
#pragma once

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "launch/guard.h"

namespace berth::launch::testing {

inline std::string helpers_dir() {
  if (const char* d = std::getenv("BERTH_HELPERS_DIR"); d != nullptr && *d != '\0') return d;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "helpers";
  std::string self(exe, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/')) + "/../../helpers";
}

// The path of berth_helper_NAME.
inline std::string helper(const std::string& name) {
  return helpers_dir() + "/berth_helper_" + name;
}

// How many descriptors this process has open, to check that nothing leaked. The
// guard's descriptor (guard.h), which lives as long as the process, is opened first so
// that it is counted before and after alike.
inline int count_open_fds() {
  (void)guard::fd();
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory's own descriptor
}

// This process's children, other than the guard (guard.h), alive or not yet reaped:
// empty when every child berth started has been reaped.
inline std::vector<pid_t> children_left() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    pid_t pid = 0;
    while (in >> pid) {
      if (pid != guard::pid()) out.push_back(pid);
    }
  }
  closedir(d);
  return out;
}

}  // namespace berth::launch::testing
