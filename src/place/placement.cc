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
                                str::printable(nodes[i]), idset::encode_ids(c)));
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

Result<std::vector<int>> parse_ids(std::string_view text, std::string_view origin) {
  auto ids = idset::parse_ids(text);
  if (!ids.ok()) return ids.error().with_context(std::string(origin));
  if (ids->empty()) return fail(Errc::kInvalidInput, fmt::format("{}: an empty id list", origin));
  return ids;
}

}  // namespace berth::place
