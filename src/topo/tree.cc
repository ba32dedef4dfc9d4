#include "topo/tree.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "util/files.h"

namespace berth::topo::tree {

std::string under(const std::string& root, std::string_view abs_path) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r.empty() || r == "/") return std::string(abs_path);
  return r + std::string(abs_path);
}

std::string shown(const std::string& root, std::string_view abs_path) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r.empty() || r == "/") return std::string(abs_path);
  return fmt::format("{} under {}", abs_path, r);
}

Result<std::optional<std::string>> read_optional(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    // A path through a regular file (a fake tree with `cpu0` as a file) is as absent
    // as a missing one.
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return fail(Errc::kIo, fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  }
  // Kernel attributes are regular files; opening anything else (a FIFO in a fake
  // tree) could block for ever.
  if (!S_ISREG(st.st_mode)) {
    return fail(Errc::kIo, fmt::format("{}: is not a regular file", path));
  }
  BERTH_TRY(std::string text, files::read_file(path, max_bytes));
  return std::optional<std::string>(std::move(text));
}

Result<std::optional<std::vector<std::string>>> list_dir(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(path.c_str()), &::closedir);
  if (!d) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::vector<std::string>>();
    return fail(Errc::kIo, fmt::format("{}: cannot list: {}", path, std::strerror(errno)));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d.get())) {
    std::string_view n(e->d_name);
    if (n == "." || n == "..") continue;
    if (names.size() >= kMaxDirEntries) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: more than {} entries", path, kMaxDirEntries));
    }
    names.emplace_back(n);
  }
  std::sort(names.begin(), names.end());
  return std::optional<std::vector<std::string>>(std::move(names));
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace berth::topo::tree
