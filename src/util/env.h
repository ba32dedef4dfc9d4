// Env: an environment as a value.
//
// Library code never calls getenv: it is handed an Env. The CLI builds one from the
// process environment, or from `--env-file FILE` so that every resource manager's
// source can be tested without its scheduler. Lookups of variables that feed a
// parser go through get_bounded(), which refuses absurdly long values with a message
// naming the variable instead of handing megabytes to a parser.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace berth {

class Env {
 public:
  // The longest value get_bounded() accepts. Linux allows 128 KiB per variable; no
  // resource manager writes anything near 64 KiB (a 10^5-node Slurm nodelist is a
  // few bytes compressed), so a value that long is corruption, not an allocation.
  static constexpr size_t kMaxValueBytes = 64 * 1024 - 1;

  Env() = default;

  // The process environment (`environ`), less what set_for_berth_only() set. Only the
  // CLI (and the Python module) call this.
  static Env from_process();

  // Sets `name` in the process environment for berth's own libraries — hwloc reads its
  // plugin list only there — and leaves it out of from_process() from then on, so that
  // no process berth starts inherits it. It changes the process environment: only
  // main calls it, before any thread.
  static void set_for_berth_only(const std::string& name, const std::string& value);

  // Parses an env file: one NAME=VALUE per line; blank lines and lines starting with
  // '#' are skipped; a trailing CR is dropped; VALUE is taken verbatim (no quoting).
  // Errors name "path:line". `text` is the file's content, `path` its name.
  static Result<Env> parse_env_file(std::string_view text, const std::string& path);
  // Reads and parses the file at `path`.
  static Result<Env> from_file(const std::string& path);

  std::optional<std::string> get(std::string_view name) const;
  // Like get(), but a value longer than kMaxValueBytes is an error naming `name`.
  Result<std::optional<std::string>> get_bounded(std::string_view name) const;
  bool has(std::string_view name) const { return vars_.count(std::string(name)) > 0; }

  void set(std::string name, std::string value) { vars_[std::move(name)] = std::move(value); }
  void unset(std::string_view name) { vars_.erase(std::string(name)); }

  const std::map<std::string, std::string, std::less<>>& vars() const { return vars_; }

  // True when `name` is a valid variable name: [A-Za-z_][A-Za-z0-9_]*.
  static bool valid_name(std::string_view name);

 private:
  std::map<std::string, std::string, std::less<>> vars_;
};

}  // namespace berth
