// MIG: an NVIDIA GPU in MIG mode is not one GPU to CUDA but several — each MIG
// instance a device of its own, named by its MIG UUID in CUDA_VISIBLE_DEVICES — so a
// node's GPUs are its MIG instances where MIG is on (spec 02 §5). Only NVML names them
// (nvml.h); the driver's files only show that instances exist
// (/proc/driver/nvidia/capabilities/gpu<N>/mig/gi<M>). Without NVML such a GPU is
// given whole, and the node says why.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "topo/gpu_identity.h"
#include "topo/gpus.h"
#include "topo/nvml.h"
#include "util/result.h"

namespace berth::topo {

// Replaces each GPU of `devices` (the node's NVIDIA GPUs, in its numbering) that `nvml`
// reports in MIG mode with instances by those instances: id and uuid the MIG UUID,
// model the instance's name, bus, NUMA node, cores and driver its GPU's. A GPU is
// matched by bus address, else by UUID. When `gpus` took its ids from the driver
// files (no visibility variable set), its ids become the new devices' ids, and its
// node count theirs. A variable's ids are the scheduler's word and are kept, in its
// numbering: then the instances are added after the whole GPUs, so that an id naming
// either is found.
void apply_mig(const std::vector<NvmlGpu>& nvml, Gpus& gpus, std::vector<GpuIdentity>& devices);

// The indices (the driver's gpu<N>) of the GPUs whose driver files show MIG instances.
Result<std::vector<int>> gpus_with_mig_instances(const std::string& root);

// Applies MIG to a node's NVIDIA GPUs where the driver's files show instances: through
// the NVML `open_nvml` gives (called only then: initialising NVML costs a start-up
// what reading a directory does not; null with its reason when there is none), or,
// without NVML, with a note in gpus.diagnostics that those GPUs are given whole.
using OpenNvml = std::function<std::shared_ptr<Nvml>(std::string* why)>;
Result<void> describe_mig(const std::string& root, const OpenNvml& open_nvml, Gpus& gpus,
                          std::vector<GpuIdentity>& devices);

}  // namespace berth::topo
