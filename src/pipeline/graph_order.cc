// Ordering a graph's steps (graph_order.h).
#include "pipeline/graph_order.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

// The steps around one cycle among `left` (steps Kahn's algorithm could not order), in
// data-flow order, first step repeated at the end.
std::vector<size_t> find_cycle(const std::vector<Step>& steps, const std::vector<bool>& left) {
  size_t start = 0;
  while (!left[start]) ++start;
  // Every step left has a dep that is left too, so walking deps must revisit a step.
  std::vector<size_t> path;
  std::unordered_map<size_t, size_t> at;
  size_t cur = start;
  while (!at.count(cur)) {
    at[cur] = path.size();
    path.push_back(cur);
    for (size_t d : steps[cur].deps) {
      if (left[d]) {
        cur = d;
        break;
      }
    }
  }
  std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(at[cur]), path.end());
  cycle.push_back(cur);
  std::reverse(cycle.begin(), cycle.end());  // deps point against the flow of data
  return cycle;
}

}  // namespace

// Orders `steps` so each comes after its deps (Kahn's algorithm, smallest expansion
// index first, so the order is stable), remapping every index. Linear but for the heap
// of ready steps; a graph already in order (every dep earlier, as a foreach table's
// steps are) is left as it is.
Result<std::vector<Step>> topological(std::vector<Step> steps, const std::string& path) {
  size_t n = steps.size();
  bool ordered = true;
  for (size_t i = 0; i < n && ordered; ++i) {
    // deps are sorted: the last is the latest.
    if (!steps[i].deps.empty() && steps[i].deps.back() >= i) ordered = false;
  }
  if (ordered) return steps;

  // Who reads each step, flat: dependents of d are readers[first[d] .. first[d + 1]).
  std::vector<size_t> pending(n);
  std::vector<size_t> first(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    pending[i] = steps[i].deps.size();
    for (size_t d : steps[i].deps) ++first[d + 1];
  }
  for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<size_t> readers(first[n]);
  {
    std::vector<size_t> at(first.begin(), first.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      for (size_t d : steps[i].deps) readers[at[d]++] = i;
    }
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  // A min-heap of expansion indices (ascending, so already a heap).
  auto later = std::greater<>();
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (size_t k = first[i]; k < first[i + 1]; ++k) {
      if (--pending[readers[k]] == 0) {
        ready.push_back(readers[k]);
        std::push_heap(ready.begin(), ready.end(), later);
      }
    }
  }
  if (order.size() != n) {
    std::vector<bool> left(n, true);
    for (size_t i : order) left[i] = false;
    std::vector<std::string> names;
    for (size_t i : find_cycle(steps, left)) names.push_back(steps[i].name);
    return fail(Errc::kInvalidInput,
                fmt::format("{}: cycle: {} (data flows left to right: each step's output is "
                            "read by the next)",
                            path, str::join(names, " -> ")));
  }
  std::vector<size_t> new_index(n);
  for (size_t k = 0; k < n; ++k) new_index[order[k]] = k;
  std::vector<Step> out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    out.push_back(std::move(steps[order[k]]));
    Step& s = out.back();
    for (size_t& d : s.deps) d = new_index[d];
    std::sort(s.deps.begin(), s.deps.end());
    for (auto& [name, in] : s.inputs) {
      for (InputItem& item : in.items) {
        if (item.kind == InputItem::Kind::kStepOutput) item.step = new_index[item.step];
      }
    }
  }
  return out;
}

}  // namespace berth::pipeline
