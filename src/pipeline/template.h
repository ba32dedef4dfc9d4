// Templates: text with {placeholders}, as the pipeline file writes names, inputs,
// commands and environment values (spec 04 §3).
//
// A template is parsed once into pieces and expanded against a Scope that says what a
// placeholder may name at that spot. Expansion never touches the staging directory:
// {in.X} and {out.X} stay symbolic (Segment::kInput / kOutput) until a step is rendered
// for a staging directory (command.h), which is what keeps step keys independent of
// where a step runs (spec 04 §5).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::pipeline {

// One piece of a parsed template: literal text, or a placeholder's name (no braces).
struct TemplatePiece {
  bool placeholder = false;
  std::string text;
  bool operator==(const TemplatePiece&) const = default;
};

// Splits `text` into pieces; "{{" and "}}" are literal braces (spec 04 §3). Fails
// (kInvalidInput; the message names the problem but not the template's origin, which
// callers add) on an unclosed '{', a lone '}', an empty "{}" or a '{' inside a
// placeholder.
Result<std::vector<TemplatePiece>> parse_template(std::string_view text);

// A piece of expanded text: literal, or a reference to an input or output of the step
// whose path is only known once a staging directory is chosen.
struct Segment {
  enum class Kind { kText, kInput, kOutput };
  Kind kind = Kind::kText;
  std::string value;  // the text, or the input's / output's name
  bool operator==(const Segment&) const = default;
};
// Expanded text: adjacent kText segments are always merged, and never empty.
using Word = std::vector<Segment>;

// A parameter value: its TOML type and its text (spec 04 §2: integers in decimal,
// booleans "true"/"false", floats in the shortest form that reads back exactly).
struct Param {
  enum class Type { kString, kInteger, kFloat, kBoolean };
  Type type = Type::kString;
  std::string text;
  bool operator==(const Param&) const = default;
};
const char* param_type_name(Param::Type t);

// What placeholders may name where a template is expanded. A null pointer or an
// absent resource means that kind of placeholder names nothing there.
struct Scope {
  const std::map<std::string, std::string>* bindings = nullptr;  // foreach key -> value
  const std::map<std::string, Param>* params = nullptr;          // {param.X}
  const std::set<std::string>* inputs = nullptr;                 // {in.X}
  const std::set<std::string>* outputs = nullptr;                // {out.X}
  std::optional<int> cores, gpus, tasks, nodes;                  // {cores} ...
};

// Expands `text` against `scope`. Fails (kInvalidInput, message "placeholder {x} names
// nothing" or a parse_template() message) on the first placeholder the scope lacks.
Result<Word> expand_template(std::string_view text, const Scope& scope);

// expand_template() for a spot where {in.X}/{out.X} are not allowed: the plain text.
Result<std::string> expand_plain(std::string_view text, const Scope& scope);

}  // namespace berth::pipeline
