// Usable core ids: which CPU ids a placement may name, one per physical core.
//
// A placement's cores are explicit ids because the usable set may not be contiguous
// and may not start at zero. Numbering from zero is wrong on two of the three
// machines it was validated on: Aurora holds back cores 0 and 52, and PALS
// refused forty of 115 steps placed on core 0 (job 8828650); Frontier's ids skip every
// eighth. Only the kernel's own affinity and sibling lists give the right ids, so
// they are read, never assumed from the numbering — a machine that interleaved
// siblings would otherwise get two tasks on one core with no error.
//
// select_cores() is the whole policy, as a pure function of a CpuReading:
//   1. reduce the affinity to one id per physical core, keeping each core's lowest
//      allowed id;
//   2. hold it to the configured core count (the first N);
//   3. fewer than configured: use what there is and report it, since a placement
//      sized from the configuration would ask for a core that is not there; more than
//      configured is not reported, because on a login node or a generic single node
//      the count is a deliberate cap, not a description of the hardware;
//   4. fewer than half of configured: not believed — the process may have been
//      started bound to a corner of the node, and numbering the allocation from that
//      corner would starve every launch. Fall back to the node's online CPUs reduced
//      the same way, and failing that to 0..N-1 (the numbering before usable ids
//      existed), and report which.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topo/cpu_reader.h"

namespace berth::topo {

// Where the usable core ids came from.
enum class CoreBasis {
  kAffinity,    // the process's own affinity (the normal case)
  kNodeOnline,  // not believed; the node's online CPUs instead
  kNumbered,    // not believed, and the node could not say either; 0..N-1
};
// "affinity", "node-online", "numbered": for JSON and messages.
const char* core_basis_name(CoreBasis basis);

struct CoreSelection {
  // Ascending; at most the configured count.
  std::vector<int> usable_core_ids;
  // Hardware threads per physical core, from the kernel's sibling lists of the usable
  // cores (all siblings, not only those this process may use); 1 without topology.
  int threads_per_core = 1;
  // Physical cores the affinity covers, before any cap.
  int affinity_cores = 0;
  CoreBasis basis = CoreBasis::kAffinity;
  std::vector<std::string> diagnostics;
};

// Ascending ids, one per physical core: for each core that any of `threads` is on,
// the lowest of `threads` on it.
std::vector<int> one_per_core(const std::vector<int>& threads,
                              const std::map<int, std::vector<int>>& siblings);

// Applies the policy above. `configured` is the machine's cores_per_node; absent (a
// generic node, everything detected) means no cap and no half rule. A configured
// count <= 0 is treated as absent; one above
// idset::kMaxCpuId + 1 is held to it.
CoreSelection select_cores(const CpuReading& reading, std::optional<int> configured);

}  // namespace berth::topo
