// HwlocCpuReader: this process's binding and the node's cores, from hwloc.
#include <fmt/format.h>
#include <hwloc.h>

#include <atomic>
#include <cstdlib>
#include <memory>

#include "topo/cpu_reader.h"
#include "util/idset.h"

namespace berth::topo {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

// The ids in a bitmap, ascending. An infinite bitmap (hwloc's "every CPU") or one
// past idset::kMaxCpuId is cut at the limit rather than walked for ever.
std::vector<int> ids_of(hwloc_const_bitmap_t set) {
  std::vector<int> ids;
  for (int i = hwloc_bitmap_first(set); i >= 0 && i <= idset::kMaxCpuId;
       i = hwloc_bitmap_next(set, i)) {
    ids.push_back(i);
  }
  return ids;
}

Failure hwloc_failed(const char* what) {
  return fail(Errc::kIo, fmt::format("hwloc: {} failed", what));
}

// hwloc's plugins that a cores-and-threads reading has no use for.
constexpr const char* kUnusedPlugins = "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml";

// The reading itself; read() keeps the first.
Result<CpuReading> read_now() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return hwloc_failed("hwloc_topology_init");
  Topology topo(raw);
  // Include the PUs outside this process's cgroup: a core's siblings are what the
  // hardware shares, not what the job was given, and the fallback for an affinity
  // that is not believed needs the whole node (cores.h).
  if (hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    return hwloc_failed("hwloc_topology_set_flags");
  }
  // Cores and threads are all this reads: caches, I/O and the rest are not discovered.
  hwloc_topology_set_cache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(raw) != 0) return hwloc_failed("hwloc_topology_load");

  Bitmap bound(hwloc_bitmap_alloc());
  if (!bound) return hwloc_failed("hwloc_bitmap_alloc");
  // The process's binding; a thread's own is the fallback where the OS cannot say for
  // the whole process.
  if (hwloc_get_cpubind(raw, bound.get(), HWLOC_CPUBIND_PROCESS) != 0 &&
      hwloc_get_cpubind(raw, bound.get(), HWLOC_CPUBIND_THREAD) != 0) {
    return hwloc_failed("hwloc_get_cpubind");
  }
  hwloc_bitmap_and(bound.get(), bound.get(), hwloc_topology_get_allowed_cpuset(raw));

  CpuReading r;
  unsigned v = hwloc_get_api_version();
  r.source = fmt::format("hwloc {}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff);
  r.allowed = ids_of(bound.get());
  r.online = ids_of(hwloc_topology_get_topology_cpuset(raw));
  if (r.allowed.empty()) return fail(Errc::kNotFound, "hwloc: this process is bound to no CPU");

  // A PU that is in no core object (some ARM and virtual machines) gets no entry and
  // so reads as a core of its own, as a sysfs tree without topology files does.
  int ncores = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE);
  for (int i = 0; i < ncores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(raw, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    if (!core || !core->cpuset) continue;
    std::vector<int> members = ids_of(core->cpuset);
    for (int id : members) r.siblings[id] = members;
  }
  return r;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> HwlocCpuReader::unused_plugins(const Env& env) {
  for (const char* chosen : {"HWLOC_PLUGINS_BLACKLIST", "HWLOC_PLUGINS_PATH", "HWLOC_COMPONENTS"}) {
    if (env.has(chosen)) return std::nullopt;
  }
  return std::make_pair(std::string("HWLOC_PLUGINS_BLACKLIST"), std::string(kUnusedPlugins));
}

Result<CpuReading> HwlocCpuReader::read() const {
  // Once per process: loading the topology is most of a run's start-up, and berth
  // never rebinds itself (it binds the processes it launches).
  static const Result<CpuReading> once = read_now();
  return once;
}

}  // namespace berth::topo
