#include "launch/directives.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "util/strings.h"

namespace berth::launch {
namespace {

// Every message echoes the user's argument; printable() keeps it on one line whatever
// bytes it holds.
std::string shown(std::string_view s) { return str::printable(s, 128); }

Failure bad(std::string_view flag, std::string message) {
  return fail(Errc::kInvalidInput, fmt::format("{}: {}", flag, message));
}

// A value or separator with a NUL byte cannot reach the child intact: envp entries are
// C strings, so everything after the NUL would vanish without a word. Refuse it here,
// where the message can still name the flag.
std::optional<Failure> check_no_nul(std::string_view flag, std::string_view what,
                                    std::string_view name, std::string_view text) {
  if (text.find('\0') == std::string_view::npos) return std::nullopt;
  return bad(flag, fmt::format("the {} of '{}' contains a NUL byte", what, shown(name)));
}

// "N=V" for --set-env, --add-env and -x N=V.
Result<EnvDirective> parse_assignment(std::string_view flag, std::string_view arg,
                                      EnvDirective::Kind kind) {
  size_t eq = arg.find('=');
  if (eq == std::string_view::npos) {
    return bad(flag, fmt::format("'{}' has no '=VALUE'", shown(arg)));
  }
  std::string_view name = arg.substr(0, eq);
  std::string_view value = arg.substr(eq + 1);
  if (name.empty()) return bad(flag, fmt::format("'{}' has no name before '='", shown(arg)));
  if (!Env::valid_name(name)) {
    return bad(flag, fmt::format("'{}' is not a variable name", shown(name)));
  }
  if (auto f = check_no_nul(flag, "value", name, value)) return std::move(*f);
  EnvDirective d;
  d.kind = kind;
  d.name = std::string(name);
  d.value = std::string(value);
  return d;
}

// "N" or "PREFIX*" for --unset-env and -x. The prefix must itself be a valid name, so
// "*" alone (every variable) is refused: emptying or copying the whole environment is
// never what a one-character typo should do.
Result<EnvDirective> parse_name_or_prefix(std::string_view flag, std::string_view arg,
                                          EnvDirective::Kind kind) {
  if (arg.empty()) return bad(flag, "needs a variable name");
  EnvDirective d;
  d.kind = kind;
  std::string_view name = arg;
  if (name.back() == '*') {
    d.prefix = true;
    name.remove_suffix(1);
    if (name.empty()) return bad(flag, "'*' has no prefix before the '*'");
  }
  if (!Env::valid_name(name)) {
    return bad(flag, fmt::format("'{}' is not a variable name{}", shown(arg),
                                 d.prefix ? " followed by '*'" : ""));
  }
  d.name = std::string(name);
  return d;
}

// "N[c]" plus the value, for --prepend-env and --append-env. The separator is
// everything between the first '[' (a name cannot contain one) and the final ']', so
// it may be empty ("N[]") or several characters ("N[::]"). A missing bracket is an
// error rather than a default separator: "PATH" with no brackets is far more likely a
// forgotten "[:]" than a wish to glue two paths together.
Result<EnvDirective> parse_edit(std::string_view flag, std::string_view arg, std::string_view value,
                                EnvDirective::Kind kind) {
  size_t open = arg.find('[');
  if (open == std::string_view::npos) {
    return bad(flag, fmt::format("'{}' is missing '[SEPARATOR]'", shown(arg)));
  }
  if (arg.back() != ']') {
    bool has_close = arg.find(']', open + 1) != std::string_view::npos;
    return bad(flag, fmt::format("'{}' {}", shown(arg),
                                 has_close ? "has text after ']'" : "is missing ']'"));
  }
  std::string_view name = arg.substr(0, open);
  std::string_view sep = arg.substr(open + 1, arg.size() - open - 2);
  if (name.empty()) return bad(flag, fmt::format("'{}' has no name before '['", shown(arg)));
  if (!Env::valid_name(name)) {
    return bad(flag, fmt::format("'{}' is not a variable name", shown(name)));
  }
  if (auto f = check_no_nul(flag, "separator", name, sep)) return std::move(*f);
  if (auto f = check_no_nul(flag, "value", name, value)) return std::move(*f);
  EnvDirective d;
  d.kind = kind;
  d.name = std::string(name);
  d.separator = std::string(sep);
  d.value = std::string(value);
  return d;
}

// Every variable whose name starts with `prefix`, in name order. Env is a sorted map,
// so they are one contiguous run from lower_bound(prefix).
template <typename Fn>
void for_each_with_prefix(const Env& env, const std::string& prefix, Fn fn) {
  const auto& vars = env.vars();
  for (auto it = vars.lower_bound(prefix); it != vars.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    fn(it->first, it->second);
  }
}

void unset_prefix(const std::string& prefix, Env& env) {
  std::vector<std::string> doomed;
  for_each_with_prefix(env, prefix,
                       [&](const std::string& n, const std::string&) { doomed.push_back(n); });
  for (const std::string& n : doomed) env.unset(n);
}

}  // namespace

Result<EnvDirective> parse_set_env(std::string_view arg) {
  return parse_assignment("--set-env", arg, EnvDirective::kSet);
}

Result<EnvDirective> parse_add_env(std::string_view arg) {
  return parse_assignment("--add-env", arg, EnvDirective::kAdd);
}

Result<EnvDirective> parse_unset_env(std::string_view arg) {
  return parse_name_or_prefix("--unset-env", arg, EnvDirective::kUnset);
}

Result<EnvDirective> parse_prepend_env(std::string_view arg, std::string_view value) {
  return parse_edit("--prepend-env", arg, value, EnvDirective::kPrepend);
}

Result<EnvDirective> parse_append_env(std::string_view arg, std::string_view value) {
  return parse_edit("--append-env", arg, value, EnvDirective::kAppend);
}

Result<EnvDirective> parse_export(std::string_view arg) {
  // -x N=V is --set-env N=V under another name, so it becomes a kSet: apply has one
  // code path for "set", and `value` stays meaningful only for the kinds that own it.
  if (arg.find('=') != std::string_view::npos) {
    return parse_assignment("-x", arg, EnvDirective::kSet);
  }
  return parse_name_or_prefix("-x", arg, EnvDirective::kExport);
}

Result<void> apply_directives(const std::vector<EnvDirective>& directives, const Env& parent,
                              Env& env) {
  // Strictly front to back, each seeing the result of the last (spec 03 §3: order is
  // the contract). Every lookup is of a whole name in a map, never a textual prefix
  // match on "NAME=VALUE" strings, so PATH can never edit PATHEXT; only an explicit
  // PREFIX* reaches past the name.
  for (const EnvDirective& d : directives) {
    switch (d.kind) {
      case EnvDirective::kSet:
        env.set(d.name, d.value);
        break;
      case EnvDirective::kAdd:
        // ADD is not SET (spec 03 §3): a variable that is present keeps its value, even
        // an empty one — "unless it already has a value" means "unless it is set".
        if (!env.has(d.name)) env.set(d.name, d.value);
        break;
      case EnvDirective::kUnset:
        if (d.prefix) {
          unset_prefix(d.name, env);
        } else {
          env.unset(d.name);
        }
        break;
      case EnvDirective::kPrepend:
      case EnvDirective::kAppend: {
        // Onto an unset or empty variable the result is V alone: "x:" on PATH would
        // put the current directory on the child's search path.
        std::optional<std::string> old = env.get(d.name);
        if (!old || old->empty()) {
          env.set(d.name, d.value);
        } else if (d.kind == EnvDirective::kPrepend) {
          env.set(d.name, d.value + d.separator + *old);
        } else {
          env.set(d.name, *old + d.separator + d.value);
        }
        break;
      }
      case EnvDirective::kExport:
        if (d.prefix) {
          // None matching is fine: "-x OMPI_*" on a machine without Open MPI.
          for_each_with_prefix(parent, d.name,
                               [&](const std::string& n, const std::string& v) { env.set(n, v); });
        } else {
          std::optional<std::string> v = parent.get(d.name);
          if (!v) {
            // The whole name, never cut: which variable is the point of the message.
            std::string name = str::printable(d.name, SIZE_MAX);
            return fail(Errc::kNotFound,
                        fmt::format("-x {}: '{}' is not set in berth's environment", name, name));
          }
          env.set(d.name, std::move(*v));
        }
        break;
    }
  }
  return Ok{};
}

}  // namespace berth::launch
