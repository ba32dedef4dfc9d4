// A pipeline's configuration and a run's overrides of it (config.h, spec 04 §2.4).
#include "pipeline/config.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "pipeline/toml_param.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/suggest.h"
#include "util/toml_fields.h"

namespace berth::pipeline {
namespace {

// A --configfile is a handful of values, not a pipeline.
constexpr size_t kMaxConfigFileBytes = 1 << 20;
constexpr TomlLimits kLimits{64 * 1024, 1 << 16};

// The declared names, for "did you mean".
std::vector<std::string_view> names_of(const std::map<std::string, Param>& config) {
  std::vector<std::string_view> names;
  names.reserve(config.size());
  for (const auto& [name, value] : config) names.push_back(name);
  return names;
}

std::string undeclared(const std::map<std::string, Param>& config, std::string_view name,
                       const std::string& pipeline) {
  return fmt::format(
      "'{}' is not declared in {}'s [config]{}", str::printable(name), pipeline,
      config.empty() ? " (it has no [config] table)" : str::did_you_mean(name, names_of(config)));
}

}  // namespace

Result<void> apply_config_text(std::map<std::string, Param>& config, std::string_view text,
                               const std::string& path, const std::string& pipeline) {
  BERTH_TRY(toml::table root, parse_toml(text, path));
  TomlFields f(root, path, kLimits);
  for (const auto& [key, value] : root) {
    std::string name(key.str());
    const toml::node* n = f.node(name);
    auto it = config.find(name);
    if (it == config.end()) {
      return f.error(n, str::printable(name), undeclared(config, name, pipeline));
    }
    BERTH_TRY(Param p, param_of(f, *n, name));
    Param::Type want = it->second.type;
    // An integer is a float's value too (`rate = 1` for a float).
    if (p.type == Param::Type::kInteger && want == Param::Type::kFloat) {
      p = Param{Param::Type::kFloat, float_text(static_cast<double>(n->as_integer()->get()))};
    }
    if (p.type != want) {
      return f.error(n, str::printable(name),
                     fmt::format("must be {} {}, as [config] declares it, not {}",
                                 want == Param::Type::kInteger ? "an" : "a", param_type_name(want),
                                 param_type_name(p.type)));
    }
    it->second = std::move(p);
  }
  return Ok{};
}

Result<Param> config_value_of(Param::Type type, std::string_view text) {
  switch (type) {
    case Param::Type::kString:
      return Param{type, std::string(text)};
    case Param::Type::kInteger: {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return fail(Errc::kInvalidInput, "must be an integer");
      }
      return Param{type, std::to_string(v)};
    }
    case Param::Type::kFloat: {
      // strtod reads what TOML writes (1e-3, 0.5, inf) and more; the whole text must go.
      std::string s(text);
      char* end = nullptr;
      double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || str::is_space(s.front())) {
        return fail(Errc::kInvalidInput, "must be a number");
      }
      return Param{type, float_text(d)};
    }
    case Param::Type::kBoolean:
      if (text == "true" || text == "false") return Param{type, std::string(text)};
      return fail(Errc::kInvalidInput, "must be true or false");
  }
  return fail(Errc::kInvalidInput, "unknown type");
}

Result<void> apply_config_overrides(std::map<std::string, Param>& config,
                                    const ConfigOverrides& overrides, const std::string& pipeline) {
  for (const std::string& file : overrides.files) {
    auto text = files::read_file(file, kMaxConfigFileBytes);
    if (!text.ok()) return text.error().with_context("--configfile");
    auto applied = apply_config_text(config, *text, file, pipeline);
    if (!applied.ok()) return applied.error().with_context("--configfile");
  }
  for (const std::string& a : overrides.assignments) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      return fail(Errc::kInvalidInput,
                  fmt::format("--config: '{}' is not NAME=VALUE", str::printable(a)));
    }
    std::string name = a.substr(0, eq);
    auto it = config.find(name);
    if (it == config.end()) {
      return fail(Errc::kInvalidInput, "--config: " + undeclared(config, name, pipeline));
    }
    auto v = config_value_of(it->second.type, std::string_view(a).substr(eq + 1));
    if (!v.ok()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("--config: {}: '{}' {}, as [config] declares it", name,
                              str::printable(a.substr(eq + 1)), v.error().message()));
    }
    it->second = std::move(*v);
  }
  return Ok{};
}

}  // namespace berth::pipeline
