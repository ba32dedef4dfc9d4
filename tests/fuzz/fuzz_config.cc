// Fuzzes a run's [config] overrides (spec 04 §2.4): the bytes before the first NUL are
// a --configfile, each line after it a --config NAME=VALUE, applied to a [config] of
// each type. Any bytes give values of the declared types, in their one text, or an
// Error on one line naming what was wrong — never a crash or an escaping exception.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "pipeline/config.h"

namespace {

[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const berth::Error& e) {
  for (char c : e.message()) {
    if (c == '\n' || c == '\r' || c == '\0') broken("one-line message", e.message());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace berth::pipeline;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view file = in.substr(0, nul);
  std::map<std::string, Param> config = {
      {"n", {Param::Type::kInteger, "1"}},
      {"r", {Param::Type::kFloat, "0.5"}},
      {"b", {Param::Type::kBoolean, "true"}},
      {"s", {Param::Type::kString, "x"}},
  };
  const auto declared = config;
  auto applied = apply_config_text(config, file, "fuzz.toml", "p.toml");
  if (!applied.ok()) {
    check_error(applied.error());
    if (applied.error().message().rfind("fuzz.toml", 0) != 0) {
      broken("a file's error names it", applied.error().message());
    }
    return 0;
  }
  ConfigOverrides o;
  if (nul != std::string_view::npos) {
    std::string_view rest = in.substr(nul + 1);
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      o.assignments.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
  }
  auto r = apply_config_overrides(config, o, "p.toml");
  if (!r.ok()) {
    check_error(r.error());
    return 0;
  }
  // Every value keeps its declared type, and its text is what reading it as that type
  // gives: one text per value.
  for (const auto& [name, p] : config) {
    if (p.type != declared.at(name).type) broken("declared type kept", name);
    auto again = config_value_of(p.type, p.text);
    if (!again.ok() || again->text != p.text) broken("one text per value", p.text);
  }
  return 0;
}
