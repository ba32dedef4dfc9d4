#include "topo/cores.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "util/idset.h"

namespace berth::topo {
namespace {

// A core is named by the lowest id among its siblings. A thread without topology is
// its own core; a sibling list that disagrees with another's simply makes two cores,
// which over-counts rather than ever putting two tasks on one core's id.
int core_key(int thread, const std::map<int, std::vector<int>>& siblings) {
  auto it = siblings.find(thread);
  if (it == siblings.end() || it->second.empty()) return thread;
  return std::min(thread, it->second.front());
}

// The largest sibling count among `cores`, and whether they all agree.
std::pair<int, bool> threads_per_core(const std::vector<int>& cores,
                                      const std::map<int, std::vector<int>>& siblings) {
  int most = 0;
  int least = 0;
  for (int c : cores) {
    auto it = siblings.find(c);
    int n = it == siblings.end() ? 1 : std::max<int>(1, static_cast<int>(it->second.size()));
    most = std::max(most, n);
    least = least == 0 ? n : std::min(least, n);
  }
  return {std::max(most, 1), most == least};
}

}  // namespace

const char* core_basis_name(CoreBasis basis) {
  switch (basis) {
    case CoreBasis::kAffinity:
      return "affinity";
    case CoreBasis::kNodeOnline:
      return "node-online";
    case CoreBasis::kNumbered:
      return "numbered";
  }
  return "affinity";
}

std::vector<int> one_per_core(const std::vector<int>& threads,
                              const std::map<int, std::vector<int>>& siblings) {
  std::vector<int> sorted = threads;
  std::sort(sorted.begin(), sorted.end());
  std::set<int> seen;
  std::vector<int> out;
  // Ascending order makes the first thread seen on each core its lowest allowed id.
  for (int t : sorted) {
    if (seen.insert(core_key(t, siblings)).second) out.push_back(t);
  }
  return out;
}

CoreSelection select_cores(const CpuReading& reading, std::optional<int> configured) {
  CoreSelection s;
  if (configured && *configured <= 0) configured.reset();
  // The machine parser already bounds the count; this keeps a caller's mistake from
  // numbering a billion cores.
  if (configured && *configured > idset::kMaxCpuId + 1) configured = idset::kMaxCpuId + 1;
  std::vector<int> cores = one_per_core(reading.allowed, reading.siblings);
  s.affinity_cores = static_cast<int>(cores.size());
  const size_t have = cores.size();

  if (!configured) {
    s.usable_core_ids = std::move(cores);
  } else {
    const size_t want = static_cast<size_t>(*configured);
    if (have >= want) {
      // More than configured is a deliberate cap (a login node, a generic single node),
      // not a description of the hardware, so not reported.
      cores.resize(want);
      s.usable_core_ids = std::move(cores);
    } else if (2 * have >= want) {
      s.diagnostics.push_back(fmt::format(
          "this process may use {} physical cores ({}), fewer than the {} configured; a "
          "placement sized from the configuration would ask for a core that is not there",
          have, idset::encode_ids(cores), want));
      s.usable_core_ids = std::move(cores);
    } else {
      // A reading that leaves fewer than half the configured cores is not believed:
      // the process may have been started bound to a corner of the node.
      std::string why = fmt::format(
          "this process may use only {} physical cores ({}), fewer than half of the {} "
          "configured: not believed, since the process may have been started bound to a "
          "corner of the node",
          have, idset::encode_ids(cores), want);
      std::vector<int> node = one_per_core(reading.online, reading.siblings);
      if (2 * node.size() >= want) {
        if (node.size() > want) node.resize(want);
        s.basis = CoreBasis::kNodeOnline;
        s.diagnostics.push_back(why + fmt::format("; using the node's online CPUs instead ({})",
                                                  idset::encode_ids(node)));
        if (node.size() < want) {
          s.diagnostics.push_back(
              fmt::format("the node has {} physical cores online, fewer than the {} configured",
                          node.size(), want));
        }
        s.usable_core_ids = std::move(node);
      } else {
        std::vector<int> numbered(want);
        for (size_t i = 0; i < want; ++i) numbered[i] = static_cast<int>(i);
        s.basis = CoreBasis::kNumbered;
        s.diagnostics.push_back(
            why + fmt::format("; the node's online CPUs say no better ({} cores), so cores "
                              "are numbered 0-{} without knowing they exist",
                              node.size(), want - 1));
        s.usable_core_ids = std::move(numbered);
      }
    }
  }

  auto [tpc, uniform] = threads_per_core(s.usable_core_ids, reading.siblings);
  s.threads_per_core = tpc;
  if (!uniform) {
    s.diagnostics.push_back(fmt::format(
        "cores differ in their number of hardware threads; reporting the largest, {}", tpc));
  }
  return s;
}

}  // namespace berth::topo
