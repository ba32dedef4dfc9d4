// Fuzzes the six environment-directive parsers and apply_directives (spec 03 §3).
//
// Input: one directive per line. The line's first byte picks the flag ('s' --set-env,
// 'a' --add-env, 'u' --unset-env, 'p' --prepend-env, 'A' --append-env, 'x' -x; any
// other byte picks by its value mod 6); the rest is the flag's argument, and for
// prepend/append the text after the first TAB is the value.
//
// Properties checked, abort() on any violation:
//   - a parse failure is kInvalidInput, its message starts with the flag and is one line;
//   - a parse success describes exactly its argument (re-rendering it gives the input
//     back) with a valid name and no NUL byte in a value or separator;
//   - each directive, applied alone, does what its flag says to its variable and
//     touches no other variable — PATH never edits PATHEXT (spec 03 §3) — except that
//     PREFIX* reaches exactly the variables starting with PREFIX;
//   - only `-x N` with N unset in the parent fails, as kNotFound naming it, and a
//     failed directive changes nothing;
//   - applying the whole list at once equals applying it one directive at a time, or
//     fails with the first failing directive's message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "launch/directives.h"
#include "util/env.h"
#include "util/result.h"

namespace {

using berth::Env;
using berth::Errc;
using berth::launch::EnvDirective;

[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Enough directives to exercise ordering; more only slows each run down.
constexpr size_t kMaxDirectives = 64;

const char* const kFlags[] = {"--set-env",     "--add-env",    "--unset-env",
                              "--prepend-env", "--append-env", "-x"};

int flag_index(char c) {
  switch (c) {
    case 's':
      return 0;
    case 'a':
      return 1;
    case 'u':
      return 2;
    case 'p':
      return 3;
    case 'A':
      return 4;
    case 'x':
      return 5;
  }
  return static_cast<unsigned char>(c) % 6;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

void check_parse_error(const berth::Error& e, const char* flag) {
  if (e.code() != Errc::kInvalidInput) broken("parse error code", e.message());
  if (!starts_with(e.message(), std::string(flag) + ": ")) broken("names the flag", e.message());
  for (char c : e.message()) {
    if (c == '\n' || c == '\r' || c == '\0') broken("one-line message", e.message());
  }
}

void check_parsed(const EnvDirective& d, int flag, std::string_view arg, std::string_view value) {
  if (!Env::valid_name(d.name)) broken("valid name", d.name);
  if (d.value.find('\0') != std::string::npos) broken("no NUL in value", d.name);
  if (d.separator.find('\0') != std::string::npos) broken("no NUL in separator", d.name);
  std::string back;
  switch (d.kind) {
    case EnvDirective::kSet:
    case EnvDirective::kAdd:
      if (d.kind != (flag == 1 ? EnvDirective::kAdd : EnvDirective::kSet)) broken("kind", d.name);
      if (flag != 0 && flag != 1 && flag != 5) broken("kind from flag", d.name);
      if (d.prefix) broken("no prefix on an assignment", d.name);
      back = d.name + "=" + d.value;
      break;
    case EnvDirective::kUnset:
    case EnvDirective::kExport:
      if (flag != (d.kind == EnvDirective::kUnset ? 2 : 5)) broken("kind from flag", d.name);
      back = d.name + (d.prefix ? "*" : "");
      break;
    case EnvDirective::kPrepend:
    case EnvDirective::kAppend:
      if (flag != (d.kind == EnvDirective::kPrepend ? 3 : 4)) broken("kind from flag", d.name);
      if (d.prefix) broken("no prefix on an edit", d.name);
      if (d.value != value) broken("value kept verbatim", d.name);
      back = d.name + "[" + d.separator + "]";
      break;
  }
  if (back != arg) broken("parse describes its argument", back);
}

std::string get_or(const Env& env, const std::string& name, const char* missing) {
  auto v = env.get(name);
  return v ? *v : missing;
}

// Whether `name` is one the directive may change.
bool reaches(const EnvDirective& d, const std::string& name) {
  return d.prefix ? starts_with(name, d.name) : name == d.name;
}

void check_step(const EnvDirective& d, const Env& parent, const Env& before, const Env& after,
                const berth::Result<void>& r) {
  if (!r.ok()) {
    if (d.kind != EnvDirective::kExport || d.prefix || parent.has(d.name)) {
      broken("only -x of an unset variable fails", r.error().message());
    }
    if (r.error().code() != Errc::kNotFound) broken("-x failure code", r.error().message());
    if (!starts_with(r.error().message(), "-x " + d.name + ": ")) {
      broken("-x failure names the variable", r.error().message());
    }
    if (before.vars() != after.vars()) broken("a failed directive changes nothing", d.name);
    return;
  }
  if (d.kind == EnvDirective::kExport && !d.prefix && !parent.has(d.name)) {
    broken("-x of an unset variable must fail", d.name);
  }
  // Nothing outside the directive's reach changed: the whole-name rule.
  for (const auto& [name, value] : before.vars()) {
    if (!reaches(d, name) && get_or(after, name, "\x01unset") != value) {
      broken("untouched variable changed", name);
    }
  }
  for (const auto& [name, value] : after.vars()) {
    if (!Env::valid_name(name)) broken("valid names only", name);
    if (!reaches(d, name) && !before.has(name)) broken("unrelated variable appeared", name);
  }
  const std::string old = get_or(before, d.name, "");
  const std::string now = get_or(after, d.name, "\x01unset");
  switch (d.kind) {
    case EnvDirective::kSet:
      if (now != d.value) broken("set", d.name);
      break;
    case EnvDirective::kAdd:
      if (now != (before.has(d.name) ? old : d.value)) broken("add is not set", d.name);
      break;
    case EnvDirective::kUnset:
      for (const auto& [name, value] : after.vars()) {
        if (reaches(d, name)) broken("unset left a variable", name);
      }
      break;
    case EnvDirective::kPrepend:
      if (now != (old.empty() ? d.value : d.value + d.separator + old)) broken("prepend", d.name);
      break;
    case EnvDirective::kAppend:
      if (now != (old.empty() ? d.value : old + d.separator + d.value)) broken("append", d.name);
      break;
    case EnvDirective::kExport:
      for (const auto& [name, value] : parent.vars()) {
        if (reaches(d, name) && get_or(after, name, "\x01unset") != value) {
          broken("export copies the parent's value", name);
        }
      }
      for (const auto& [name, value] : after.vars()) {
        if (reaches(d, name) && !parent.has(name) && get_or(before, name, "\x01") != value) {
          broken("export invented a value", name);
        }
      }
      break;
  }
}

Env make_env(std::initializer_list<std::pair<const char*, const char*>> vars) {
  Env env;
  for (const auto& [n, v] : vars) env.set(n, v);
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Env parent = make_env({{"PATH", "/parent/bin"},
                                      {"PATHEXT", ".COM"},
                                      {"HOME", "/home/u"},
                                      {"OMPI_A", "1"},
                                      {"OMPI_B", "2"},
                                      {"EMPTY", ""}});
  static const Env start = make_env({{"PATH", "/usr/bin"}, {"PATHEXT", ".EXE"}, {"FOO", "0"}});

  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<EnvDirective> directives;
  while (!text.empty() && directives.size() < kMaxDirectives) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    int flag = flag_index(line[0]);
    std::string_view arg = line.substr(1);
    std::string_view value;
    berth::Result<EnvDirective> d = berth::Error(Errc::kInternal, "unset");
    switch (flag) {
      case 0:
        d = berth::launch::parse_set_env(arg);
        break;
      case 1:
        d = berth::launch::parse_add_env(arg);
        break;
      case 2:
        d = berth::launch::parse_unset_env(arg);
        break;
      case 5:
        d = berth::launch::parse_export(arg);
        break;
      default: {
        size_t tab = arg.find('\t');
        if (tab != std::string_view::npos) {
          value = arg.substr(tab + 1);
          arg = arg.substr(0, tab);
        }
        d = flag == 3 ? berth::launch::parse_prepend_env(arg, value)
                      : berth::launch::parse_append_env(arg, value);
      }
    }
    if (!d.ok()) {
      check_parse_error(d.error(), kFlags[flag]);
      continue;
    }
    check_parsed(*d, flag, arg, value);
    directives.push_back(std::move(*d));
  }

  // One directive at a time, skipping those that fail.
  Env stepwise = start;
  std::string first_failure;
  for (const EnvDirective& d : directives) {
    Env after = stepwise;
    auto r = berth::launch::apply_directives({d}, parent, after);
    check_step(d, parent, stepwise, after, r);
    if (!r.ok() && first_failure.empty()) first_failure = r.error().message();
    if (r.ok()) stepwise = std::move(after);
  }

  // All at once: the same result, or the first failure.
  Env whole = start;
  auto r = berth::launch::apply_directives(directives, parent, whole);
  if (r.ok() != first_failure.empty()) broken("whole list fails iff a step fails", first_failure);
  if (!r.ok() && r.error().message() != first_failure) broken("first failure", first_failure);
  if (r.ok() && whole.vars() != stepwise.vars()) broken("whole list equals steps", "");
  return 0;
}
