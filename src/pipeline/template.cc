// Template parsing and expansion (spec 04 §3).
#include "pipeline/template.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

void append_text(Word& w, std::string_view text) {
  if (text.empty()) return;
  if (!w.empty() && w.back().kind == Segment::Kind::kText) {
    w.back().value.append(text);
  } else {
    w.push_back(Segment{Segment::Kind::kText, std::string(text)});
  }
}

Failure names_nothing(std::string_view name) {
  return fail(Errc::kInvalidInput,
              fmt::format("placeholder {{{}}} names nothing", str::printable(name)));
}

// The name after `prefix` ("in." in "in.text"), or nullopt when `name` lacks it.
std::optional<std::string> after(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  return std::string(name.substr(prefix.size()));
}

}  // namespace

const char* param_type_name(Param::Type t) {
  switch (t) {
    case Param::Type::kString:
      return "string";
    case Param::Type::kInteger:
      return "integer";
    case Param::Type::kFloat:
      return "float";
    case Param::Type::kBoolean:
      return "boolean";
  }
  return "string";
}

Result<std::vector<TemplatePiece>> parse_template(std::string_view text) {
  std::vector<TemplatePiece> out;
  std::string lit;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '}') {
      // A '}' outside a placeholder is only ever half of the "}}" escape.
      if (i + 1 < text.size() && text[i + 1] == '}') {
        lit.push_back('}');
        ++i;
        continue;
      }
      return fail(Errc::kInvalidInput,
                  fmt::format("column {}: lone '}}' (write '}}}}' for a literal brace)", i + 1));
    }
    if (c != '{') {
      lit.push_back(c);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      lit.push_back('{');
      ++i;
      continue;
    }
    size_t close = text.find_first_of("{}", i + 1);
    if (close == std::string_view::npos || text[close] == '{') {
      return fail(
          Errc::kInvalidInput,
          fmt::format("column {}: unclosed '{{' (write '{{{{' for a literal brace)", i + 1));
    }
    if (close == i + 1) {
      return fail(Errc::kInvalidInput, fmt::format("column {}: empty placeholder {{}}", i + 1));
    }
    if (!lit.empty()) out.push_back(TemplatePiece{false, std::move(lit)});
    lit.clear();
    out.push_back(TemplatePiece{true, std::string(text.substr(i + 1, close - i - 1))});
    i = close;
  }
  if (!lit.empty()) out.push_back(TemplatePiece{false, std::move(lit)});
  return out;
}

Result<Word> expand_template(std::string_view text, const Scope& scope) {
  BERTH_TRY(std::vector<TemplatePiece> pieces, parse_template(text));
  Word w;
  for (const TemplatePiece& p : pieces) {
    if (!p.placeholder) {
      append_text(w, p.text);
      continue;
    }
    const std::string& name = p.text;
    // Foreach keys never contain '.', so they cannot shadow in./out./param. names; the
    // resource names are reserved as foreach keys (spec 04 §2).
    if (scope.bindings) {
      if (auto it = scope.bindings->find(name); it != scope.bindings->end()) {
        append_text(w, it->second);
        continue;
      }
    }
    if (auto x = after(name, "param.")) {
      if (scope.params) {
        if (auto it = scope.params->find(*x); it != scope.params->end()) {
          append_text(w, it->second.text);
          continue;
        }
      }
      return names_nothing(name);
    }
    if (auto x = after(name, "in.")) {
      if (scope.inputs && scope.inputs->count(*x)) {
        w.push_back(Segment{Segment::Kind::kInput, *x});
        continue;
      }
      return names_nothing(name);
    }
    if (auto x = after(name, "out.")) {
      if (scope.outputs && scope.outputs->count(*x)) {
        w.push_back(Segment{Segment::Kind::kOutput, *x});
        continue;
      }
      return names_nothing(name);
    }
    const std::optional<int>* resource = nullptr;
    if (name == "cores") resource = &scope.cores;
    if (name == "gpus") resource = &scope.gpus;
    if (name == "tasks") resource = &scope.tasks;
    if (name == "nodes") resource = &scope.nodes;
    if (resource && resource->has_value()) {
      append_text(w, std::to_string(**resource));
      continue;
    }
    return names_nothing(name);
  }
  return w;
}

Result<std::string> expand_plain(std::string_view text, const Scope& scope) {
  Scope plain = scope;
  plain.inputs = nullptr;
  plain.outputs = nullptr;
  BERTH_TRY(Word w, expand_template(text, plain));
  return w.empty() ? std::string() : w.front().value;
}

}  // namespace berth::pipeline
