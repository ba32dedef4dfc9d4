// TOML scalars as Params (toml_param.h).
#include "pipeline/toml_param.h"

#include <fmt/format.h>

namespace berth::pipeline {

std::string float_text(double d) {
  // fmt's default is the shortest text that reads back to the same double, so the
  // text (and a key) depends on the value, not on how the file spelt it.
  return fmt::format("{}", d);
}

Result<Param> param_of(const TomlFields& f, const toml::node& n, std::string_view k) {
  if (n.as_string() != nullptr) {
    BERTH_TRY(std::string text, f.string_of(&n, k));
    return Param{Param::Type::kString, std::move(text)};
  }
  if (const auto* i = n.as_integer()) return Param{Param::Type::kInteger, std::to_string(i->get())};
  if (const auto* d = n.as_floating_point())
    return Param{Param::Type::kFloat, float_text(d->get())};
  if (const auto* b = n.as_boolean()) {
    return Param{Param::Type::kBoolean, b->get() ? "true" : "false"};
  }
  return f.wrong_type(k, "a string, integer, float or boolean", n);
}

}  // namespace berth::pipeline
