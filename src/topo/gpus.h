// GPUs: which GPUs this node has and which of them this process may use.
//
// The node's GPUs are counted from what the drivers publish, read under a root
// directory like every kernel file topo reads:
//   - NVIDIA: one directory per GPU in /proc/driver/nvidia/gpus, else /dev/nvidia<N>;
//   - AMD: kfd topology nodes with simd_count > 0 (CPU nodes have none), else
//     /dev/dri/renderD<N> whose sysfs vendor is AMD's (or unknown);
//   - Intel: /sys/class/drm/card<N> with Intel's vendor id, each tile ("gt/gt<M>" for
//     i915, "device/tile<M>" for xe) a GPU of its own, named "card.tile" as Aurora's
//     configuration names them (0.0 ... 5.1).
// Ids are the ones the vendor's visibility variable takes: "0".."N-1" by the driver's
// order, or a UUID where a variable gave one.
//
// A visibility variable already set in the environment (CUDA_VISIBLE_DEVICES,
// ROCR_VISIBLE_DEVICES then HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK) defines which of
// them this process may use: a scheduler that assigned GPUs to the job said so there.
// Note that such a variable is renumbered per launch on CUDA machines (measured: four
// launches on four GPUs all reported device 0), so ids read from inside a launch
// are not global; verification must use the scheduler's own identifiers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::topo {

enum class GpuVendor { kNone, kNvidia, kAmd, kIntel };
// "none", "nvidia", "amd", "intel".
const char* gpu_vendor_name(GpuVendor vendor);
// The variable that selects that vendor's GPUs for a launch ("" for kNone).
const char* gpu_visibility_variable(GpuVendor vendor);

// Level Zero's device hierarchy variable: FLAT (its default: each tile a device,
// numbered across the node), COMBINED (the same numbering) or COMPOSITE (a card a
// device, "card.tile" its tiles). berth's Intel ids are written in the composite
// syntax, so a launch given them is also given ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE.
inline constexpr const char* kZeHierarchy = "ZE_FLAT_DEVICE_HIERARCHY";

// The hierarchy `ids` of `variable` are written in, as the variable to set beside
// them: {ZE_FLAT_DEVICE_HIERARCHY, COMPOSITE} for Intel ids naming a tile ("0.1");
// nullopt for every other case (a plain index means the same in both hierarchies
// only on a node of one-tile cards, which is the only node that numbers so).
std::optional<std::pair<std::string, std::string>> gpu_hierarchy_env(
    std::string_view variable, const std::vector<std::string>& ids);

struct Gpus {
  GpuVendor vendor = GpuVendor::kNone;
  // The GPUs this process may use, in the visibility variable's own syntax.
  std::vector<std::string> ids;
  // Where `ids` came from: "env CUDA_VISIBLE_DEVICES", "/proc/driver/nvidia/gpus",
  // "none found (...)".
  std::string provenance;
  // What the node shows before any variable restricts it, and where that was read.
  int node_count = 0;
  std::string node_provenance;
  std::vector<std::string> diagnostics;

  int count() const { return static_cast<int>(ids.size()); }
};

// Reads the node's GPUs under `root` and applies `env`'s visibility variables.
// Fails on a malformed driver file or variable, naming it; a missing file is not an
// error (that vendor is simply absent).
Result<Gpus> read_gpus(const std::string& root, const Env& env);

// Splits a visibility variable's value into ids. Empty value: no ids. Following
// CUDA, the list ends at the first empty or negative entry (reported in `notes`).
// Fails (naming `name`) on characters no device id uses, an id over 256 bytes or more
// than 4096 ids.
Result<std::vector<std::string>> parse_visible_devices(std::string_view value,
                                                       std::string_view name,
                                                       std::vector<std::string>* notes);

// The kfd topology nodes that are GPUs (those with SIMD units), in node order: each
// one's properties file (its path, absolute as on the node) and text. Fails on a
// properties file that does not parse, naming it.
inline constexpr std::string_view kKfdNodes = "/sys/class/kfd/kfd/topology/nodes";
struct KfdGpu {
  std::string path, properties;
};
Result<std::vector<KfdGpu>> kfd_gpus(const std::string& root);

// The node's Intel cards (sysfs drm cards whose vendor is Intel's), in card order:
// each one's directory ("/sys/class/drm/card1", absolute as on the node) and how many
// tiles it has (gt/gt<M> for i915, device/tile<M> for xe; at least 1). Their GPU ids
// are "card.tile" ("0.1"), or "card" for a card of one tile, numbering the Intel
// cards from 0 as Level Zero numbers its root devices.
struct IntelCard {
  std::string dir;
  size_t tiles = 1;
};
Result<std::vector<IntelCard>> intel_cards(const std::string& root);

// The simd_count of a kfd topology node's `properties` file ("key value" lines); 0
// when absent. Fails on a malformed line or value.
Result<int64_t> parse_kfd_simd_count(std::string_view text);

}  // namespace berth::topo
