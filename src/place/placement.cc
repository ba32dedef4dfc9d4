#include "place/placement.h"

#include <fmt/format.h>

#include <set>

#include "util/strings.h"

namespace berth::place {

Result<void> Placement::validate() const {
  if (nodes.empty()) return fail(Errc::kInvalidInput, "placement: names no node");
  if (cores.size() != nodes.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("placement: {} node(s) but {} core set(s); give one core set per "
                            "node, in the same order",
                            nodes.size(), cores.size()));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].empty()) return fail(Errc::kInvalidInput, "placement: an empty node name");
    if (!seen.insert(nodes[i]).second) {
      return fail(Errc::kInvalidInput, fmt::format("placement: node '{}' is named twice",
                                                   str::printable(nodes[i])));
    }
    const auto& c = cores[i];
    if (c.empty()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("placement: node '{}' has no cores", str::printable(nodes[i])));
    }
    for (size_t k = 0; k < c.size(); ++k) {
      if (c[k] < 0 || (k > 0 && c[k] <= c[k - 1])) {
        return fail(Errc::kInvalidInput,
                    fmt::format("placement: node '{}': core ids must be distinct, ascending "
                                "and non-negative ({})",
                                str::printable(nodes[i]), format_ids(c)));
      }
    }
  }
  if (gpus < 0) return fail(Errc::kInvalidInput, "placement: a negative GPU total");
  if (!gpu_ids.empty()) {
    if (static_cast<int>(gpu_ids.size()) != gpus) {
      return fail(Errc::kInvalidInput,
                  fmt::format("placement: {} GPU id(s) given for a total of {}", gpu_ids.size(),
                              gpus));
    }
    // GPU ids are node-local, so two nodes' ids may repeat ("0,1,0,1"); on one node
    // an id named twice would be one GPU counted as two.
    std::set<std::string> ids(gpu_ids.begin(), gpu_ids.end());
    if (nodes.size() == 1 && ids.size() != gpu_ids.size()) {
      return fail(Errc::kInvalidInput, "placement: a GPU id is named twice");
    }
  }
  return Ok{};
}

Result<std::vector<int>> fill_nodes_in_turn(const Placement& p, int tasks, int cpus_per_task) {
  if (tasks < 1) return fail(Errc::kInvalidInput, fmt::format("tasks must be >= 1, not {}", tasks));
  if (cpus_per_task < 1) {
    return fail(Errc::kInvalidInput,
                fmt::format("cpus per task must be >= 1, not {}", cpus_per_task));
  }
  std::vector<int> per_node(p.nodes.size(), 0);
  int left = tasks;
  int capacity = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    int cap = static_cast<int>(p.cores[i].size()) / cpus_per_task;
    capacity += cap;
    per_node[i] = std::min(cap, left);
    left -= per_node[i];
  }
  if (left > 0) {
    return fail(Errc::kRefused,
                fmt::format("{} task(s) of {} core(s) do not fit: the placement's cores hold {}",
                            tasks, cpus_per_task, capacity));
  }
  for (size_t i = 0; i < per_node.size(); ++i) {
    if (per_node[i] == 0) {
      return fail(Errc::kRefused,
                  fmt::format("node '{}' would run no task: {} task(s) fill the nodes before it; "
                              "drop it from the placement",
                              p.nodes[i], tasks));
    }
  }
  return per_node;
}

std::string format_ids(const std::vector<int>& ids) {
  std::string out;
  size_t i = 0;
  while (i < ids.size()) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i ? fmt::format("{}-{}", ids[i], ids[j]) : fmt::format("{}", ids[i]);
    i = j + 1;
  }
  return out;
}

Result<std::vector<int>> parse_ids(std::string_view text, std::string_view origin) {
  // Bounded like the kernel's CPU ids: 0..65535.
  constexpr uint64_t kMaxId = 65535;
  std::set<int> ids;
  if (str::trim(text).empty()) {
    return fail(Errc::kInvalidInput, fmt::format("{}: an empty id list", origin));
  }
  size_t pos = 1;
  for (std::string_view item : str::split(str::trim(text), ',')) {
    size_t dash = item.find('-');
    auto lo = str::parse_uint(item.substr(0, dash), kMaxId);
    auto hi = dash == std::string_view::npos ? lo : str::parse_uint(item.substr(dash + 1), kMaxId);
    if (!lo.ok() || !hi.ok()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: position {}: '{}' is not an id or a range N-M (ids 0-{})",
                              origin, pos, str::printable(item), kMaxId));
    }
    if (*hi < *lo) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: position {}: reversed range '{}'", origin, pos,
                              str::printable(item)));
    }
    for (uint64_t v = *lo; v <= *hi; ++v) ids.insert(static_cast<int>(v));
    pos += item.size() + 1;
  }
  return std::vector<int>(ids.begin(), ids.end());
}

}  // namespace berth::place
