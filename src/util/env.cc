#include "util/env.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "util/files.h"
#include "util/strings.h"

extern char** environ;  // NOLINT: the one place berth reads the process environment

namespace berth {
namespace {

// The variables set_for_berth_only() set: berth's, not the environment it hands on.
std::vector<std::string>& berths_own() {
  static std::vector<std::string> names;
  return names;
}

}  // namespace

Env Env::from_process() {
  Env env;
  const std::vector<std::string>& own = berths_own();
  for (char** p = environ; p && *p; ++p) {
    std::string_view kv(*p);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string name(kv.substr(0, eq));
    if (std::find(own.begin(), own.end(), name) != own.end()) continue;
    env.set(std::move(name), std::string(kv.substr(eq + 1)));
  }
  return env;
}

void Env::set_for_berth_only(const std::string& name, const std::string& value) {
  ::setenv(name.c_str(), value.c_str(), 1);
  berths_own().push_back(name);
}

bool Env::valid_name(std::string_view name) {
  if (name.empty()) return false;
  if (!(str::is_alpha(name[0]) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(str::is_alnum(c) || c == '_')) return false;
  }
  return true;
}

Result<Env> Env::parse_env_file(std::string_view text, const std::string& path) {
  Env env;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view t = str::trim(line);
    if (t.empty() || t[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}:{}: expected NAME=VALUE, found '{}'", path, line_no,
                              str::printable(line)));
    }
    std::string_view name = str::trim(line.substr(0, eq));
    if (!valid_name(name)) {
      return fail(Errc::kInvalidInput, fmt::format("{}:{}: '{}' is not a variable name", path,
                                                   line_no, str::printable(name)));
    }
    env.set(std::string(name), std::string(line.substr(eq + 1)));
  }
  return env;
}

Result<Env> Env::from_file(const std::string& path) {
  BERTH_TRY(std::string text, files::read_file(path));
  return parse_env_file(text, path);
}

std::optional<std::string> Env::get(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

Result<std::optional<std::string>> Env::get_bounded(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::optional<std::string>();
  if (it->second.size() > kMaxValueBytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: value is {} bytes long; the limit is {} bytes", name,
                            it->second.size(), kMaxValueBytes));
  }
  return std::optional<std::string>(it->second);
}

}  // namespace berth
