// Which GPU is which (spec 02 §5): a node's GPUs named as their drivers name them —
// UUID, model, PCI bus address — and where each sits (NUMA node, the cores next to it),
// so that a report can say what a step ran on and a placement can feed a GPU from its
// own cores. Read from the driver's files under a root directory, as topo reads
// everything:
//   - NVIDIA: /proc/driver/nvidia/gpus/<bus>/information (Model, GPU UUID, Bus
//     Location), one directory per GPU, in bus order — the order CUDA numbers them in
//     with CUDA_DEVICE_ORDER=PCI_BUS_ID — and the driver's version from
//     /proc/driver/nvidia/version;
//   - AMD: each kfd topology node with SIMD units (location_id and domain give its bus
//     address, unique_id its UUID as ROCR_VISIBLE_DEVICES takes it);
//   - Intel: each tile of each Intel drm card (intel_cards), named by its card's PCI
//     address (the sysfs `device` link) and PCI device id — sysfs names no model;
//   - every vendor: /sys/bus/pci/devices/<bus>/numa_node and local_cpulist.
// A file that is not there leaves its field empty: the GPU is still counted.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/gpus.h"
#include "util/result.h"

namespace berth::topo {

struct GpuIdentity {
  std::string id;     // in the node's numbering ("0", "1"), as Gpus::ids
  std::string uuid;   // "GPU-…" where the driver gives one
  std::string model;  // "NVIDIA H100 80GB HBM3"
  std::string bus;    // PCI address, "0000:00:06.0"
  std::string driver;  // the driver's version ("580.159.04"), where it says
  int numa_node = -1;            // -1: not known, or the node has one
  std::vector<int> local_cores;  // CPU ids next to it; empty: not known
};

// The identities of the node's GPUs of `vendor`, in its numbering. Fails on a
// malformed file, naming it.
Result<std::vector<GpuIdentity>> read_gpu_identities(const std::string& root, GpuVendor vendor);

// The identity of each of `ids` (a visibility variable's ids: an index in the node's
// numbering or a UUID) among `devices`, aligned with `ids`; an empty identity for an id
// none of them is.
std::vector<GpuIdentity> identities_of(const std::vector<std::string>& ids,
                                       const std::vector<GpuIdentity>& devices);

// What /proc/driver/nvidia/gpus/<bus>/information says: "Key: \t value" lines, of
// which Model, GPU UUID and Bus Location are taken (absent: empty). Fails on a line
// without ':' or a value with a control character, naming the line.
struct NvidiaInformation {
  std::string model, uuid, bus;
};
Result<NvidiaInformation> parse_nvidia_information(std::string_view text);

// The driver's version from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX
// x86_64 Kernel Module  580.159.04  Thu …", or "… Open Kernel Module for x86_64
// 570.86.15 …": the first word of digits and dots after "Kernel Module"); empty when
// the file says no such thing.
std::string parse_nvidia_version(std::string_view text);

// A kfd topology node's properties ("key value" lines): its PCI bus address from
// domain and location_id ("0000:c1:00.0"), and its unique_id as a UUID ("GPU-<hex>");
// empty when absent or 0. Fails on a malformed number, naming the line.
struct KfdIdentity {
  std::string bus, uuid;
};
Result<KfdIdentity> parse_kfd_identity(std::string_view text);

}  // namespace berth::topo
