// A step's foreach, read from TOML (foreach_spec.h, spec 04 §3.1).
#include "pipeline/foreach_spec.h"

#include <fmt/format.h>

#include <algorithm>

#include "pipeline/toml_param.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

SourcePos pos_of(const toml::node& n) {
  const auto& b = n.source().begin;
  return SourcePos{b.line, b.column};
}

// One item's text: a scalar, as a param's (toml_param.h).
Result<std::string> item_text(const TomlFields& g, const toml::node& item, std::string_view k) {
  if (item.is_table() || item.is_array() || item.is_date() || item.is_time() ||
      item.is_date_time()) {
    return g.error(&item, k,
                   fmt::format("items must be strings, integers, floats or booleans, not {}",
                               toml_type_name(item)));
  }
  BERTH_TRY(Param p, param_of(g, item, k));
  return std::move(p.text);
}

// The grid: key -> array of values, or { glob = "…" }.
Result<void> read_grid(TomlFields& f, const toml::table& t, StepSpec& s) {
  TomlFields g = f.sub(t, "foreach");
  for (const auto& [key, value] : t) {
    std::string k(key.str());
    const toml::node* n = g.node(k);
    if (auto problem = foreach_key_problem(k)) return g.error(n, str::printable(k), *problem);
    if (const auto* t2 = n->as_table()) {
      // { glob = "data/{sample}.fastq" }: values discovered from the files present.
      TomlFields h = g.sub(*t2, k);
      BERTH_TRY(std::string pattern, h.required_string("glob"));
      BERTH_CHECK(h.finish({"glob"}));
      s.foreach_globs.emplace(k, ForeachGlob{std::move(pattern), pos_of(*h.node("glob"))});
      continue;
    }
    const auto* a = n->as_array();
    if (!a) return g.wrong_type(k, "an array of values, or { glob = \"…\" }", *n);
    if (a->empty()) return g.error(n, k, "must not be empty");
    // One key may have as many values as its table may have steps (spec 04 §3.1); the
    // product of all of them is checked when the table is expanded.
    if (a->size() > kMaxExpandedSteps) {
      return g.error(n, k,
                     fmt::format("{} values; a table expands to at most {} steps", a->size(),
                                 kMaxExpandedSteps));
    }
    std::vector<std::string> values;
    values.reserve(a->size());
    for (const toml::node& item : *a) {
      BERTH_TRY(std::string v, item_text(g, item, k));
      values.push_back(std::move(v));
    }
    s.foreach.emplace(k, std::move(values));
  }
  return Ok{};
}

// Combinations written out: an array of tables, each one step, all with the same keys.
Result<void> read_rows(TomlFields& f, const toml::array& a, StepSpec& s) {
  const toml::node* n = f.node("foreach");
  if (a.empty()) return f.error(n, "foreach", "must not be empty");
  std::vector<std::string> first;  // foreach[0]'s keys, sorted (a TOML table is)
  for (size_t r = 0; r < a.size(); ++r) {
    std::string at = fmt::format("foreach[{}]", r);
    const auto* row = a[r].as_table();
    if (!row) {
      return f.error(&a[r], at,
                     fmt::format("must be a table of values ({{ key = value, … }}), not {}",
                                 toml_type_name(a[r])));
    }
    if (row->empty()) return f.error(&a[r], at, "must name at least one key");
    TomlFields g = f.sub(*row, at);
    for (const auto& [key, value] : *row) {
      std::string k(key.str());
      const toml::node* v = g.node(k);
      if (r == 0) {
        if (auto problem = foreach_key_problem(k)) {
          return g.error(v, str::printable(k), *problem);
        }
        first.push_back(k);
      } else if (std::find(first.begin(), first.end(), k) == first.end()) {
        return g.error(v, str::printable(k),
                       fmt::format("foreach[0] has no key '{}': every combination names the "
                                   "same keys ({})",
                                   str::printable(k), str::join(first, ", ")));
      }
      BERTH_TRY(std::string text, item_text(g, *v, k));
      s.foreach[k].push_back(std::move(text));
    }
    for (const std::string& k : first) {
      if (!row->contains(k)) {
        return f.error(&a[r], at,
                       fmt::format("has no key '{}': every combination names the same keys "
                                   "({})",
                                   k, str::join(first, ", ")));
      }
    }
  }
  s.foreach_rows = true;
  return Ok{};
}

}  // namespace

Result<void> read_foreach(TomlFields& f, StepSpec& s) {
  const toml::node* n = f.node("foreach");
  if (!n) return Ok{};
  if (const auto* t = n->as_table()) return read_grid(f, *t, s);
  if (const auto* a = n->as_array()) return read_rows(f, *a, s);
  if (n->is_string()) {
    // A table file: its rows are found when the file is read (discover_foreach()).
    BERTH_TRY(std::string path, f.string_of(n, "foreach"));
    if (path.empty()) return f.error(n, "foreach", "a table file's path must not be empty");
    s.foreach_table = ForeachTableFile{std::move(path), pos_of(*n)};
    s.foreach_rows = true;
    return Ok{};
  }
  return f.wrong_type("foreach",
                      "a table of keys (the grid), an array of tables (combinations) or a "
                      "table file's path",
                      *n);
}

}  // namespace berth::pipeline
