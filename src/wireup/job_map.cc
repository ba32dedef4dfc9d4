// JobMap (job_map.h): the derived views both wire-up servers answer from.
#include "wireup/job_map.h"

#include <algorithm>

namespace berth::wireup {

int JobMap::apps() const {
  int n = 0;
  for (const Proc& p : procs) n = std::max(n, p.app + 1);
  return n;
}

int JobMap::app_size(int a) const {
  return static_cast<int>(
      std::count_if(procs.begin(), procs.end(), [a](const Proc& p) { return p.app == a; }));
}

int JobMap::app_first_rank(int a) const {
  for (size_t r = 0; r < procs.size(); ++r) {
    if (procs[r].app == a) return static_cast<int>(r);
  }
  return -1;
}

std::vector<int> JobMap::ranks_on(int n) const {
  std::vector<int> out;
  for (size_t r = 0; r < procs.size(); ++r) {
    if (procs[r].node == n) out.push_back(static_cast<int>(r));
  }
  return out;
}

JobMap JobMap::local(std::string id, std::string node, const std::vector<int>& app_sizes) {
  JobMap m;
  m.id = std::move(id);
  m.nodes.push_back(std::move(node));
  int rank = 0;
  for (size_t a = 0; a < app_sizes.size(); ++a) {
    for (int i = 0; i < app_sizes[a]; ++i, ++rank) {
      m.procs.push_back(Proc{static_cast<int>(a), 0, rank, rank});
    }
  }
  return m;
}

}  // namespace berth::wireup
