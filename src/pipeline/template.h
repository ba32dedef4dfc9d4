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
  // {param.X} whose value is itself a template over the foreach keys (a string param
  // holding {key}): spliced in, so each step gets its own value (graph.h).
  const std::map<std::string, const class Template*>* param_templates = nullptr;
  const std::map<std::string, Param>* config = nullptr;          // {config.X}
  const std::set<std::string>* inputs = nullptr;                 // {in.X}
  const std::set<std::string>* outputs = nullptr;                // {out.X}
  std::optional<int> cores, gpus, tasks, nodes;                  // {cores} ...
  // When set, each config value a template uses is added (a step's basis names them).
  std::set<std::string>* used_config = nullptr;
  // {gpus} of a step given a share of one device ("0.5"): the share as written.
  std::optional<std::string> gpu_share;
};

// Expands `text` against `scope`. Fails (kInvalidInput, message "placeholder {x} names
// nothing" or a parse_template() message) on the first placeholder the scope lacks; the
// message adds the closest name the scope has ("did you mean"), or, when the braces
// could not hold a placeholder at all (shell braces: `awk '{print $1}'`), how to write
// literal braces.
Result<Word> expand_template(std::string_view text, const Scope& scope);

// A template parsed and checked once, then expanded once per foreach combination: what
// a [[step]] table's name, inputs, command and env are while it expands to up to
// 10^6 steps (spec 04 §3.1). Every placeholder but a foreach key is resolved when it is
// compiled — params and resources to their text, {in.X}/{out.X} to segments — so that
// expanding is appending, and a placeholder that names nothing is found once for the
// whole table rather than once per step.
class Template {
 public:
  // Compiles `text` where the foreach keys are `keys` (their values come later, in this
  // order) and everything else is as `scope` says (its `bindings` are not read). Fails
  // as expand_template() does.
  static Result<Template> compile(std::string_view text, const std::vector<std::string>& keys,
                                  const Scope& scope);

  // The template with values[k] for keys[k]: what expand_template() gives for a scope
  // binding each key to its value.
  Word expand(const std::vector<std::string_view>& values) const;
  // The same for a template compiled without {in.X}/{out.X} in scope: its plain text.
  std::string expand_plain(const std::vector<std::string_view>& values) const;
  // Whether a placeholder names the foreach key keys[k].
  bool uses_key(size_t k) const;
  // Each {in.X} it names, in order, and whether that is all there is to it: the rule
  // that a list input is a whole argv word (spec 04 §3.3).
  std::vector<std::string> inputs() const;
  bool only_one_piece() const { return pieces_.size() == 1; }
  // Whether its literal text holds any of `chars`.
  bool literal_has_any(std::string_view chars) const;
  // Whether any piece is a foreach key's value (else expand_plain() of nothing is its
  // whole text).
  bool uses_keys() const;

 private:
  struct Piece {
    Segment::Kind kind = Segment::Kind::kText;
    std::string text;  // literal text, or the input's / output's name
    int key = -1;      // >= 0: the value of keys[key] (kind kText)
  };
  std::vector<Piece> pieces_;
};

// expand_template() for a spot where {in.X}/{out.X} are not allowed: the plain text.
Result<std::string> expand_plain(std::string_view text, const Scope& scope);

}  // namespace berth::pipeline
