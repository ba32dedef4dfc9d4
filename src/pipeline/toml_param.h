// A TOML value read as a Param (spec 04 §2.3: param text): the one reading of a scalar
// for params, [config] values and foreach items, so that each type has one text.
#pragma once

#include <string_view>

#include "pipeline/template.h"
#include "util/result.h"
#include "util/toml_fields.h"

namespace berth::pipeline {

// `n` as a Param: strings verbatim, integers in decimal, booleans true/false, floats in
// the shortest text that reads back to the same double (so `0.10` and `1e-1` are both
// `0.1`). Fails through `f` (named `k`) on any other type.
Result<Param> param_of(const TomlFields& f, const toml::node& n, std::string_view k);

// The shortest text that reads back to `d`.
std::string float_text(double d);

}  // namespace berth::pipeline
