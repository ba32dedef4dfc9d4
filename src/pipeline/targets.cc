// Targets (targets.h): a graph cut down to what some steps need.
#include "pipeline/targets.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <unordered_map>

#include "util/strings.h"
#include "util/suggest.h"

namespace berth::pipeline {

bool is_target_pattern(const std::string& target) {
  return target.find_first_of("*?[") != std::string::npos;
}

Result<Graph> select_targets(Graph g, const std::vector<std::string>& targets) {
  if (targets.empty()) return g;
  const size_t n = g.steps.size();
  std::vector<char> keep(n, 0);
  std::vector<size_t> stack;
  std::unordered_map<std::string_view, size_t> by_name;
  by_name.reserve(n);
  for (size_t i = 0; i < n; ++i) by_name.emplace(g.steps[i].name, i);
  // 1. What each target names or matches; a target that selects nothing is an error,
  // never a run of nothing.
  for (const std::string& t : targets) {
    bool any = false;
    if (is_target_pattern(t)) {
      for (size_t i = 0; i < n; ++i) {
        if (::fnmatch(t.c_str(), g.steps[i].name.c_str(), 0) == 0) {
          stack.push_back(i);
          any = true;
        }
      }
    } else if (auto it = by_name.find(t); it != by_name.end()) {
      stack.push_back(it->second);
      any = true;
    }
    if (!any) {
      std::string hint;
      if (!is_target_pattern(t)) {
        std::vector<std::string_view> names;
        names.reserve(n);
        for (const Step& s : g.steps) names.push_back(s.name);
        hint = str::did_you_mean(t, names);
      }
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: {} '{}'{}", g.path,
                              is_target_pattern(t) ? "no step matches the pattern"
                                                   : "no step is named",
                              str::printable(t), hint));
    }
  }
  // 2. Everything they need: the steps they read from, and theirs, and so on.
  while (!stack.empty()) {
    size_t i = stack.back();
    stack.pop_back();
    if (keep[i]) continue;
    keep[i] = 1;
    for (size_t d : g.steps[i].deps) stack.push_back(d);
  }
  // 3. The kept steps in the graph's order (still topological), indices remapped.
  std::vector<size_t> new_index(n, 0);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (keep[i]) new_index[i] = k++;
  }
  std::vector<Step> out;
  out.reserve(k);
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    Step s = std::move(g.steps[i]);
    for (size_t& d : s.deps) d = new_index[d];
    for (auto& [name, in] : s.inputs) {
      for (InputItem& item : in.items) {
        if (item.kind == InputItem::Kind::kStepOutput) item.step = new_index[item.step];
      }
    }
    out.push_back(std::move(s));
  }
  g.steps = std::move(out);
  return g;
}

}  // namespace berth::pipeline
