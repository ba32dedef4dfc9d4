// Template parsing and expansion (spec 04 §3).
#include "pipeline/template.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"
#include "util/suggest.h"

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

// Whether `name` could be a placeholder's name at all: shell braces (`{print $1}`,
// `${HOME}` is fine, `{a,b}`) hold characters no placeholder has.
bool could_be_placeholder(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) {
    return str::is_alnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// Every name a placeholder may use under `scope` with foreach keys `keys`.
std::vector<std::string> names_in(const std::vector<std::string>& keys, const Scope& scope) {
  std::vector<std::string> names(keys.begin(), keys.end());
  auto add = [&names](std::string_view prefix, const auto* m) {
    if (!m) return;
    for (const auto& item : *m) {
      if constexpr (requires { item.first; }) {
        names.push_back(std::string(prefix) + item.first);
      } else {
        names.push_back(std::string(prefix) + item);
      }
    }
  };
  add("param.", scope.params);
  add("param.", scope.param_templates);
  add("config.", scope.config);
  add("in.", scope.inputs);
  add("out.", scope.outputs);
  if (scope.cores) names.emplace_back("cores");
  if (scope.gpus) names.emplace_back("gpus");
  if (scope.tasks) names.emplace_back("tasks");
  if (scope.nodes) names.emplace_back("nodes");
  return names;
}

Failure names_nothing(std::string_view name, const std::vector<std::string>& keys,
                      const Scope& scope) {
  std::string hint;
  if (!could_be_placeholder(name)) {
    hint = " (braces that are not a placeholder, as in a shell or awk script, are written "
           "{{ and }})";
  } else {
    std::vector<std::string> names = names_in(keys, scope);
    hint = str::did_you_mean(name, std::vector<std::string_view>(names.begin(), names.end()));
  }
  return fail(Errc::kInvalidInput,
              fmt::format("placeholder {{{}}} names nothing here{}", str::printable(name), hint));
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

Result<Template> Template::compile(std::string_view text, const std::vector<std::string>& keys,
                                   const Scope& scope) {
  BERTH_TRY(std::vector<TemplatePiece> pieces, parse_template(text));
  Template t;
  // Literal text, merged with the literal before it: a compiled template never holds
  // two text pieces in a row, nor an empty one.
  auto literal = [&t](std::string_view s) {
    if (s.empty()) return;
    if (!t.pieces_.empty() && t.pieces_.back().kind == Segment::Kind::kText &&
        t.pieces_.back().key < 0) {
      t.pieces_.back().text.append(s);
    } else {
      t.pieces_.push_back(Piece{Segment::Kind::kText, std::string(s), -1});
    }
  };
  for (const TemplatePiece& p : pieces) {
    if (!p.placeholder) {
      literal(p.text);
      continue;
    }
    const std::string& name = p.text;
    // Foreach keys never contain '.', so they cannot shadow in./out./param. names; the
    // resource names are reserved as foreach keys (spec 04 §2).
    if (auto k = std::find(keys.begin(), keys.end(), name); k != keys.end()) {
      t.pieces_.push_back(Piece{Segment::Kind::kText, "", static_cast<int>(k - keys.begin())});
      continue;
    }
    if (auto x = after(name, "param.")) {
      if (scope.params) {
        if (auto it = scope.params->find(*x); it != scope.params->end()) {
          literal(it->second.text);
          continue;
        }
      }
      if (scope.param_templates) {
        if (auto it = scope.param_templates->find(*x); it != scope.param_templates->end()) {
          // The param's own pieces: its foreach keys are this template's keys too.
          for (const Piece& q : it->second->pieces_) {
            if (q.key < 0) {
              literal(q.text);
            } else {
              t.pieces_.push_back(q);
            }
          }
          continue;
        }
      }
      return names_nothing(name, keys, scope);
    }
    if (auto x = after(name, "config.")) {
      if (scope.config) {
        if (auto it = scope.config->find(*x); it != scope.config->end()) {
          literal(it->second.text);
          if (scope.used_config) scope.used_config->insert(*x);
          continue;
        }
      }
      return names_nothing(name, keys, scope);
    }
    if (auto x = after(name, "in.")) {
      if (scope.inputs && scope.inputs->count(*x)) {
        t.pieces_.push_back(Piece{Segment::Kind::kInput, std::move(*x), -1});
        continue;
      }
      return names_nothing(name, keys, scope);
    }
    if (auto x = after(name, "out.")) {
      if (scope.outputs && scope.outputs->count(*x)) {
        t.pieces_.push_back(Piece{Segment::Kind::kOutput, std::move(*x), -1});
        continue;
      }
      return names_nothing(name, keys, scope);
    }
    if (name == "gpus" && scope.gpu_share) {
      literal(*scope.gpu_share);
      continue;
    }
    const std::optional<int>* resource = nullptr;
    if (name == "cores") resource = &scope.cores;
    if (name == "gpus") resource = &scope.gpus;
    if (name == "tasks") resource = &scope.tasks;
    if (name == "nodes") resource = &scope.nodes;
    if (resource && resource->has_value()) {
      literal(std::to_string(**resource));
      continue;
    }
    return names_nothing(name, keys, scope);
  }
  return t;
}

Word Template::expand(const std::vector<std::string_view>& values) const {
  Word w;
  for (const Piece& p : pieces_) {
    if (p.kind != Segment::Kind::kText) {
      w.push_back(Segment{p.kind, p.text});
    } else {
      append_text(w, p.key >= 0 ? values[static_cast<size_t>(p.key)] : std::string_view(p.text));
    }
  }
  return w;
}

std::string Template::expand_plain(const std::vector<std::string_view>& values) const {
  std::string out;
  for (const Piece& p : pieces_) {
    out += p.key >= 0 ? values[static_cast<size_t>(p.key)] : std::string_view(p.text);
  }
  return out;
}

bool Template::literal_has_any(std::string_view chars) const {
  return std::any_of(pieces_.begin(), pieces_.end(), [chars](const Piece& p) {
    return p.key < 0 && p.kind == Segment::Kind::kText &&
           p.text.find_first_of(chars) != std::string::npos;
  });
}

bool Template::uses_keys() const {
  return std::any_of(pieces_.begin(), pieces_.end(), [](const Piece& p) { return p.key >= 0; });
}

bool Template::uses_key(size_t k) const {
  return std::any_of(pieces_.begin(), pieces_.end(),
                     [k](const Piece& p) { return p.key == static_cast<int>(k); });
}

std::vector<std::string> Template::inputs() const {
  std::vector<std::string> out;
  for (const Piece& p : pieces_) {
    if (p.kind == Segment::Kind::kInput) out.push_back(p.text);
  }
  return out;
}

Result<Word> expand_template(std::string_view text, const Scope& scope) {
  std::vector<std::string> keys;
  std::vector<std::string_view> values;
  if (scope.bindings) {
    for (const auto& [k, v] : *scope.bindings) {
      keys.push_back(k);
      values.push_back(v);
    }
  }
  BERTH_TRY(Template t, Template::compile(text, keys, scope));
  return t.expand(values);
}

Result<std::string> expand_plain(std::string_view text, const Scope& scope) {
  Scope plain = scope;
  plain.inputs = nullptr;
  plain.outputs = nullptr;
  BERTH_TRY(Word w, expand_template(text, plain));
  return w.empty() ? std::string() : w.front().value;
}

}  // namespace berth::pipeline
