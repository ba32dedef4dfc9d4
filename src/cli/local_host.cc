#include "cli/local_host.h"

#include <sched.h>
#include <unistd.h>

#include <climits>
#include <set>
#include <string>

#include "topo/cpu_reader.h"

namespace berth::cli {
namespace {

int64_t affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int64_t usable_cores() {
  // The same reading the node's description uses (topo/cpu_reader.h), so the topology
  // is loaded once: a core counts when any of its allowed threads does.
  auto r = topo::HwlocCpuReader().read();
  if (!r.ok()) return affinity_cpu_count();
  std::set<int> cores;
  for (int id : r->allowed) {
    auto it = r->siblings.find(id);
    cores.insert(it != r->siblings.end() && !it->second.empty() ? it->second.front() : id);
  }
  return cores.empty() ? affinity_cpu_count() : static_cast<int64_t>(cores.size());
}

}  // namespace

alloc::LocalHost local_host() {
  // Once per process: loading the topology is most of it, and the answer cannot change
  // under a running berth that did not move itself.
  static const alloc::LocalHost cached = [] {
    alloc::LocalHost h;
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof buf - 1) == 0 && buf[0]) {
      h.hostname = buf;
    } else {
      h.hostname = "localhost";
    }
    h.aliases = {"localhost", "localhost.localdomain", "127.0.0.1", "::1"};
    h.usable_cores = usable_cores();
    return h;
  }();
  return cached;
}

}  // namespace berth::cli
