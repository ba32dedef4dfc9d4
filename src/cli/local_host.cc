#include "cli/local_host.h"

#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

#include <climits>
#include <string>

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
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return affinity_cpu_count();
  int64_t count = 0;
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  if (hwloc_topology_load(topo) == 0 && bound &&
      hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0) {
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
      if (core && hwloc_bitmap_intersects(core->cpuset, bound)) ++count;
    }
  }
  if (bound) hwloc_bitmap_free(bound);
  hwloc_topology_destroy(topo);
  return count > 0 ? count : affinity_cpu_count();
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
