// Environment directives: how a launch's environment is built from berth's own
// (spec 03 §3).
//
//   --set-env N=V            set N to V (replacing any value)
//   --add-env N=V            set N to V only if N is unset
//   --unset-env N            remove N; a trailing '*' makes N a prefix (FOO_*)
//   --prepend-env 'N[c]' V   N = V c old   (c: the separator, in brackets; V alone if unset)
//   --append-env  'N[c]' V   N = old c V
//   -x N                     export N from berth's environment (an error if unset)
//   -x N=V                   set N to V
//   -x PREFIX*               export every variable of berth's that starts with PREFIX
//
// Directives apply in the order given, job-wide ones first and then each app's, so an
// app's directive wins over the job's. Order is the contract (spec 03 §3): `--prepend-env
// FOO[:] x --set-env FOO=1` leaves FOO=1, the reverse leaves FOO=x:1. A variable is
// matched by its whole name — a directive on PATH never touches PATHEXT.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::launch {

struct EnvDirective {
  enum Kind { kSet, kAdd, kUnset, kPrepend, kAppend, kExport };
  Kind kind = kSet;
  std::string name;    // the variable, or the prefix when `prefix`
  std::string value;   // kSet, kAdd, kPrepend, kAppend
  std::string separator;  // kPrepend, kAppend: the text between brackets (may be empty)
  bool prefix = false;    // kUnset, kExport: name ended in '*'
};

// Parsers, one per flag. `arg` is the flag's argument (for prepend/append the first
// of its two arguments; `value` the second). Errors name the flag and say what is
// wrong ("--set-env: 'FOO' has no '=VALUE'", "--prepend-env: 'PATH[:' is missing ']'").
Result<EnvDirective> parse_set_env(std::string_view arg);
Result<EnvDirective> parse_add_env(std::string_view arg);
Result<EnvDirective> parse_unset_env(std::string_view arg);
Result<EnvDirective> parse_prepend_env(std::string_view arg, std::string_view value);
Result<EnvDirective> parse_append_env(std::string_view arg, std::string_view value);
Result<EnvDirective> parse_export(std::string_view arg);  // -x

// Applies `directives` in order to `env`. `parent` is berth's own environment, the
// source of -x exports. Fails (naming the directive) only for `-x N` when N is unset
// in `parent`.
Result<void> apply_directives(const std::vector<EnvDirective>& directives, const Env& parent,
                              Env& env);

}  // namespace berth::launch
