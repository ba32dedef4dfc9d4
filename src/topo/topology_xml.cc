// topology_xml (topology_xml.h): the whole topology, exported once.
#include "topo/topology_xml.h"

#include <fmt/format.h>
#include <hwloc.h>

#include <mutex>
#include <optional>

namespace berth::topo {
namespace {

Result<std::string> read_xml() {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) return fail(Errc::kIo, "hwloc: hwloc_topology_init failed");
  // I/O devices are left out: MPI ranks place themselves by cores, caches and NUMA
  // nodes, and PCI discovery is the slow part of a load.
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  std::optional<Error> err;
  char* xml = nullptr;
  int len = 0;
  if (hwloc_topology_load(t) != 0) {
    err = Error(Errc::kIo, "hwloc: hwloc_topology_load failed");
  } else if (hwloc_topology_export_xmlbuffer(t, &xml, &len, 0) != 0 || xml == nullptr) {
    err = Error(Errc::kIo, "hwloc: hwloc_topology_export_xmlbuffer failed");
  }
  std::string out;
  if (xml != nullptr) {
    out.assign(xml, len > 0 ? static_cast<size_t>(len - 1) : 0);  // len counts the NUL
    hwloc_free_xmlbuffer(t, xml);
  }
  hwloc_topology_destroy(t);
  if (err) return *err;
  return out;
}

}  // namespace

Result<std::string> topology_xml() {
  static std::once_flag once;
  static std::optional<Result<std::string>> kept;
  std::call_once(once, [] { kept.emplace(read_xml()); });
  return *kept;
}

}  // namespace berth::topo
