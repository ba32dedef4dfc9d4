// What a step left beside its outputs (leftovers.h).
#include "pipeline/leftovers.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace berth::pipeline {
std::vector<std::string> undeclared_files(const std::vector<std::string>& removed,
                                          const std::vector<std::string>& outputs,
                                          const std::vector<std::string>& staged) {
  std::vector<std::string> out;
  for (const std::string& name : removed) {
    if (name.starts_with("out/")) {
      std::string bare = name.substr(4);
      if (bare.ends_with('/')) bare.pop_back();
      if (std::find(outputs.begin(), outputs.end(), bare) != outputs.end()) continue;
    } else if (std::find(staged.begin(), staged.end(), name) != staged.end()) {
      continue;
    }
    out.push_back(name);
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
