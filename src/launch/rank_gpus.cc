// Per-rank GPUs (rank_gpus.h).
#include "launch/rank_gpus.h"

#include <fmt/format.h>

#include <algorithm>

#include "topo/gpus.h"

namespace berth::launch {

Result<std::vector<std::vector<std::string>>> assign_rank_gpus(
    const RankGpus& gpus, const std::vector<std::vector<int>>& rank_cpus) {
  std::vector<std::vector<std::string>> out(rank_cpus.size());
  if (gpus.per_rank <= 0) return out;
  if (gpus.variable.empty()) {
    return fail(Errc::kInvalidInput, "GPUs per rank, but this node has no GPU visibility "
                                     "variable (no GPUs found)");
  }
  const size_t per = static_cast<size_t>(gpus.per_rank);
  if (rank_cpus.size() * per > gpus.ids.size()) {
    return fail(Errc::kRefused,
                fmt::format("{} rank(s) x {} GPU(s) each need {} GPUs, but {} are usable here",
                            rank_cpus.size(), per, rank_cpus.size() * per, gpus.ids.size()));
  }
  std::vector<char> taken(gpus.ids.size(), 0);
  auto next_to = [&](size_t g, int cpu) {
    if (g >= gpus.local_cores.size()) return false;
    const auto& local = gpus.local_cores[g];
    return std::find(local.begin(), local.end(), cpu) != local.end();
  };
  // First every rank the free devices next to its first bound CPU, then each the lowest
  // free ones up to its count: a rank filling up first must not take the device next
  // to a later rank's core.
  std::vector<std::vector<size_t>> mine(rank_cpus.size());
  for (size_t r = 0; r < rank_cpus.size(); ++r) {
    if (rank_cpus[r].empty()) continue;
    for (size_t g = 0; g < gpus.ids.size() && mine[r].size() < per; ++g) {
      if (!taken[g] && next_to(g, rank_cpus[r].front())) {
        taken[g] = 1;
        mine[r].push_back(g);
      }
    }
  }
  for (size_t r = 0; r < rank_cpus.size(); ++r) {
    for (size_t g = 0; g < gpus.ids.size() && mine[r].size() < per; ++g) {
      if (!taken[g]) {
        taken[g] = 1;
        mine[r].push_back(g);
      }
    }
    std::sort(mine[r].begin(), mine[r].end());
    for (size_t g : mine[r]) out[r].push_back(gpus.ids[g]);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> gpu_env(const std::string& variable,
                                                         const std::vector<std::string>& ids,
                                                         const Env& around) {
  std::vector<std::pair<std::string, std::string>> out;
  if (variable.empty()) return out;
  std::string list;
  for (const std::string& id : ids) list += (list.empty() ? "" : ",") + id;
  out.emplace_back(variable, list);
  if (auto h = topo::gpu_hierarchy_env(variable, ids)) out.push_back(std::move(*h));
  if (variable == "CUDA_VISIBLE_DEVICES" && !around.has("CUDA_VISIBLE_DEVICES") &&
      !around.has("CUDA_DEVICE_ORDER")) {
    out.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  }
  return out;
}

}  // namespace berth::launch
