// What a step left beside its outputs (leftovers.h).
#include "pipeline/leftovers.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

// The names in `dir` (not "." or ".."), each with '/' after a directory's.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    bool is_dir = ::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    out.push_back(is_dir ? name + "/" : name);
  }
  ::closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> undeclared_files(const std::string& stage,
                                          const std::vector<std::string>& outputs,
                                          const std::vector<std::string>& staged) {
  std::vector<std::string> out;
  for (const std::string& name : entries(stage)) {
    if (name == "in/" || name == "out/") continue;
    if (std::find(staged.begin(), staged.end(), name) != staged.end()) continue;
    out.push_back(name);
  }
  for (const std::string& name : entries(stage + "/out")) {
    std::string bare = name.ends_with('/') ? name.substr(0, name.size() - 1) : name;
    if (std::find(outputs.begin(), outputs.end(), bare) == outputs.end()) {
      out.push_back("out/" + name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> leftovers_notice(const std::vector<std::string>& files, size_t shown) {
  if (files.empty()) return std::nullopt;
  std::vector<std::string> named;
  for (size_t i = 0; i < files.size() && i < shown; ++i) named.push_back(str::printable(files[i]));
  std::string more =
      files.size() > shown ? fmt::format(" and {} more", files.size() - shown) : std::string();
  return fmt::format(
      "left {} file(s) it did not declare as outputs, removed with its staging directory: "
      "{}{} (name one in `outputs` to keep it)",
      files.size(), str::join(named, ", "), more);
}

}  // namespace berth::pipeline
