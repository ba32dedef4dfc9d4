// NVML: what NVIDIA's management library says about this node's GPUs — which GPUs it
// sees (UUID, model, PCI bus address), their MIG instances, the driver's version, and
// which processes hold each device right now. The last is what the driver's files do not
// say, and what lets berth check that a step ran on the GPUs it was given.
//
// libnvidia-ml.so.1 is loaded at run time, not linked: a node without NVIDIA's driver
// has none, and that is not an error — open_nvml() says why there is no NVML instead.
// Nvml is the seam: the real implementation calls the library, tests may fake it, and
// the library itself may be replaced by a path in BERTH_NVML_LIBRARY (tests load the test
// NVML library of tests/helpers that way).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::topo {

struct NvmlMig {
  std::string uuid;  // "MIG-…"
  int index = 0;     // its index among its GPU's MIG devices
  std::string name;  // as NVML names it ("NVIDIA H100 80GB HBM3 MIG 1g.10gb")
};

struct NvmlGpu {
  std::string uuid;           // "GPU-…"
  std::string model;          // "NVIDIA H100 80GB HBM3"
  std::string bus;            // PCI address, lower case with a 4-digit domain: "0000:3b:00.0"
  bool mig_on = false;        // MIG mode is on (a GPU without MIG: off)
  std::vector<NvmlMig> migs;  // by index; empty when MIG is off
};

struct NvmlProcess {
  int64_t pid = 0;          // as the driver sees it (the host's pid namespace)
  std::string device_uuid;  // the GPU ("GPU-…") or MIG instance ("MIG-…") it holds
};

// What berth asks of NVML. Every call may fail, with a message naming the NVML function
// and what NVML said. Implementations are safe to call from several threads.
class Nvml {
 public:
  virtual ~Nvml() = default;

  // The GPUs NVML sees, in its order (by PCI bus), with their MIG instances.
  virtual Result<std::vector<NvmlGpu>> gpus() = 0;
  // The driver's version ("580.95.05").
  virtual Result<std::string> driver_version() = 0;
  // The compute processes of every GPU, and of every MIG instance of a GPU in MIG mode
  // (named by the instance's UUID): one entry per process and device it holds.
  virtual Result<std::vector<NvmlProcess>> compute_processes() = 0;
};

// The library open_nvml() loads unless BERTH_NVML_LIBRARY names another path.
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// Loads NVML and initialises it (nvmlInit_v2). The returned object holds that one
// initialisation until it is destroyed (nvmlShutdown: NVML counts them, so several
// holders do not disturb each other); share it rather than opening one per use. Null,
// with `why` set, when the library cannot be loaded or lacks a function (naming the
// library), when nvmlInit_v2 fails (with NVML's reason), or when BERTH_NVML_LIBRARY
// is not a usable value (naming it): a node without NVML is not an error.
std::shared_ptr<Nvml> open_nvml(const Env& env, std::string* why);

}  // namespace berth::topo
