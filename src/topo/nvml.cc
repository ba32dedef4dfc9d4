#include "topo/nvml.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "util/shared_library.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

// The part of NVML's ABI (nvml.h, which is not needed to build berth) that berth uses.
// Handles are opaque pointers; nvmlReturn_t is a C enum, an int.
struct NvmlDeviceSt;
using nvmlDevice_t = NvmlDeviceSt*;
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kErrorNotSupported = 3;      // NVML_ERROR_NOT_SUPPORTED
constexpr nvmlReturn_t kErrorNotFound = 6;          // NVML_ERROR_NOT_FOUND
constexpr nvmlReturn_t kErrorInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
constexpr unsigned kMigEnable = 1;                  // NVML_DEVICE_MIG_ENABLE

// nvmlProcessInfo_t as of NVML's v2/v3 process queries (CUDA 11 and later).
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(NvmlProcessInfo) == 24, "nvmlProcessInfo_t is 24 bytes on LP64");

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
static_assert(sizeof(NvmlPciInfo) == 68, "nvmlPciInfo_t is 68 bytes");

// NVML's buffer sizes: NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE,
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE.
constexpr unsigned kUuidBytes = 96, kNameBytes = 96, kDriverBytes = 80;
// Far above any node (8 GPUs, 7 MIG instances each; thousands of processes): a count
// past these is a broken library, not a bigger machine.
constexpr unsigned kMaxDevices = 1024, kMaxMigs = 64, kMaxProcesses = 1u << 16;
// How often a process list may grow between NVML's count and its copy before giving up.
constexpr int kProcessTries = 8;

struct Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*driver_version)(char*, unsigned);
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*pci_info)(nvmlDevice_t, NvmlPciInfo*);
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*max_mig_count)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned, nvmlDevice_t*);
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, NvmlProcessInfo*);
};

// NVML is one library state per process, whichever object calls it: one lock for all.
std::mutex& nvml_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The text NVML wrote into a buffer of `bytes`: it must end within the buffer and be
// printable, since it goes into reports and error messages.
Result<std::string> text(const char* buffer, size_t bytes, const char* function) {
  size_t n = ::strnlen(buffer, bytes);
  if (n == bytes)
    return fail(Errc::kInvalidInput, fmt::format("{} returned unterminated text", function));
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(buffer[i]);
    if (c < 0x20 || c > 0x7e) {
      return fail(
          Errc::kInvalidInput,
          fmt::format("{} returned a character that is not printable (0x{:02x})", function, c));
    }
  }
  return std::string(buffer, n);
}

// NVML's words for `r`, or its number when those are not printable text.
std::string describe(const Api& api, nvmlReturn_t r) {
  const char* s = api.error_string(r);
  if (s != nullptr) {
    auto t = text(s, 256, "nvmlErrorString");
    if (t.ok()) return fmt::format("{} (NVML error {})", *t, r);
  }
  return fmt::format("NVML error {}", r);
}

Failure failed(const Api& api, const char* function, nvmlReturn_t r) {
  return fail(Errc::kIo, fmt::format("{}: {}", function, describe(api, r)));
}

// NVML's bus id ("00000000:3B:00.0": an 8-digit domain, upper case) as the driver's
// files and sysfs write it ("0000:3b:00.0").
std::string pci_address(std::string_view bus_id) {
  std::string id = str::to_lower(bus_id);
  if (id.size() > 9 && id[8] == ':' && id.compare(0, 4, "0000") == 0) id.erase(0, 4);
  return id;
}

class LoadedNvml final : public Nvml {
 public:
  explicit LoadedNvml(const Api& api) : api_(api) {}
  ~LoadedNvml() override {
    std::lock_guard lock(nvml_mutex());
    api_.shutdown();  // this object's initialisation; NVML stays up for any other holder
  }

  Result<std::vector<NvmlGpu>> gpus() override {
    std::lock_guard lock(nvml_mutex());
    BERTH_TRY(auto handles, gpu_handles());
    std::vector<NvmlGpu> out;
    for (nvmlDevice_t h : handles) {
      NvmlGpu gpu;
      BERTH_TRY(gpu.uuid, uuid_of(h));
      char name[kNameBytes] = {};
      if (auto r = api_.name(h, name, kNameBytes); r != kSuccess) {
        return failed(api_, "nvmlDeviceGetName", r);
      }
      BERTH_TRY(gpu.model, text(name, kNameBytes, "nvmlDeviceGetName"));
      NvmlPciInfo pci = {};
      if (auto r = api_.pci_info(h, &pci); r != kSuccess) {
        return failed(api_, "nvmlDeviceGetPciInfo_v3", r);
      }
      BERTH_TRY(auto bus, text(pci.busId, sizeof pci.busId, "nvmlDeviceGetPciInfo_v3"));
      gpu.bus = pci_address(bus);
      BERTH_TRY(auto migs, migs_of(h));
      gpu.mig_on = migs.has_value();
      for (auto& [index, mig] : migs.value_or(std::vector<std::pair<int, nvmlDevice_t>>{})) {
        NvmlMig m;
        m.index = index;
        BERTH_TRY(m.uuid, uuid_of(mig));
        if (auto r = api_.name(mig, name, kNameBytes); r != kSuccess) {
          return failed(api_, "nvmlDeviceGetName", r);
        }
        BERTH_TRY(m.name, text(name, kNameBytes, "nvmlDeviceGetName"));
        gpu.migs.push_back(std::move(m));
      }
      out.push_back(std::move(gpu));
    }
    return out;
  }

  Result<std::string> driver_version() override {
    std::lock_guard lock(nvml_mutex());
    char version[kDriverBytes] = {};
    if (auto r = api_.driver_version(version, kDriverBytes); r != kSuccess) {
      return failed(api_, "nvmlSystemGetDriverVersion", r);
    }
    return text(version, kDriverBytes, "nvmlSystemGetDriverVersion");
  }

  Result<std::vector<NvmlProcess>> compute_processes() override {
    std::lock_guard lock(nvml_mutex());
    BERTH_TRY(auto handles, gpu_handles());
    std::vector<NvmlProcess> out;
    for (nvmlDevice_t h : handles) {
      // A GPU in MIG mode runs its processes on its instances, which NVML asks one by one.
      BERTH_TRY(auto migs, migs_of(h));
      std::vector<nvmlDevice_t> devices;
      if (migs.has_value()) {
        for (auto& [index, mig] : *migs) devices.push_back(mig);
      } else {
        devices.push_back(h);
      }
      for (nvmlDevice_t d : devices) BERTH_CHECK(append_processes(d, &out));
    }
    return out;
  }

 private:
  Result<std::vector<nvmlDevice_t>> gpu_handles() {
    unsigned count = 0;
    if (auto r = api_.count(&count); r != kSuccess) return failed(api_, "nvmlDeviceGetCount_v2", r);
    if (count > kMaxDevices) {
      return fail(
          Errc::kInvalidInput,
          fmt::format("nvmlDeviceGetCount_v2 says {} GPUs, more than {}", count, kMaxDevices));
    }
    std::vector<nvmlDevice_t> out(count);
    for (unsigned i = 0; i < count; ++i) {
      if (auto r = api_.handle_by_index(i, &out[i]); r != kSuccess) {
        return failed(api_, "nvmlDeviceGetHandleByIndex_v2", r);
      }
    }
    return out;
  }

  Result<std::string> uuid_of(nvmlDevice_t h) {
    char uuid[kUuidBytes] = {};
    if (auto r = api_.uuid(h, uuid, kUuidBytes); r != kSuccess) {
      return failed(api_, "nvmlDeviceGetUUID", r);
    }
    BERTH_TRY(auto out, text(uuid, kUuidBytes, "nvmlDeviceGetUUID"));
    if (out.empty()) return fail(Errc::kInvalidInput, "nvmlDeviceGetUUID returned no UUID");
    return out;
  }

  // A GPU's MIG devices (index, handle), or nothing when MIG mode is off or the GPU has
  // none (NVML_ERROR_NOT_SUPPORTED). Indices without an instance are skipped.
  using Migs = std::optional<std::vector<std::pair<int, nvmlDevice_t>>>;
  Result<Migs> migs_of(nvmlDevice_t h) {
    unsigned current = 0, pending = 0;
    auto r = api_.mig_mode(h, &current, &pending);
    if (r == kErrorNotSupported) return Migs();
    if (r != kSuccess) return failed(api_, "nvmlDeviceGetMigMode", r);
    if (current != kMigEnable) return Migs();
    unsigned max = 0;
    if (r = api_.max_mig_count(h, &max); r != kSuccess) {
      return failed(api_, "nvmlDeviceGetMaxMigDeviceCount", r);
    }
    if (max > kMaxMigs) {
      return fail(
          Errc::kInvalidInput,
          fmt::format("nvmlDeviceGetMaxMigDeviceCount says {}, more than {}", max, kMaxMigs));
    }
    std::vector<std::pair<int, nvmlDevice_t>> out;
    for (unsigned i = 0; i < max; ++i) {
      nvmlDevice_t mig = nullptr;
      r = api_.mig_handle(h, i, &mig);
      if (r == kErrorNotFound) continue;
      if (r != kSuccess) return failed(api_, "nvmlDeviceGetMigDeviceHandleByIndex", r);
      out.emplace_back(static_cast<int>(i), mig);
    }
    return Migs(std::move(out));
  }

  // Appends the compute processes of device `h`. NVML first says how many there are;
  // the list may grow before the copy, which it then refuses with the new count.
  Result<void> append_processes(nvmlDevice_t h, std::vector<NvmlProcess>* out) {
    BERTH_TRY(auto uuid, uuid_of(h));
    std::vector<NvmlProcessInfo> infos;
    for (int attempt = 0; attempt < kProcessTries; ++attempt) {
      auto n = static_cast<unsigned>(infos.size());
      auto r = api_.processes(h, &n, infos.empty() ? nullptr : infos.data());
      if (r == kSuccess) {
        if (n > infos.size()) {
          return fail(Errc::kInvalidInput,
                      fmt::format("nvmlDeviceGetComputeRunningProcesses_v3 on {} says it wrote {} "
                                  "processes into room for {}",
                                  uuid, n, infos.size()));
        }
        for (unsigned i = 0; i < n; ++i) out->push_back({infos[i].pid, uuid});
        return Ok{};
      }
      if (r != kErrorInsufficientSize) {
        return failed(api_, "nvmlDeviceGetComputeRunningProcesses_v3", r).error.with_context(uuid);
      }
      if (n > kMaxProcesses) {
        return fail(Errc::kInvalidInput,
                    fmt::format("nvmlDeviceGetComputeRunningProcesses_v3 on {} says {} processes, "
                                "more than {}",
                                uuid, n, kMaxProcesses));
      }
      infos.resize(std::max<size_t>(n, infos.size() + 1));
    }
    return fail(Errc::kIo, fmt::format("nvmlDeviceGetComputeRunningProcesses_v3 on {}: the list "
                                       "grew on each of {} tries",
                                       uuid, kProcessTries));
  }

  Api api_;
};

}  // namespace

std::shared_ptr<Nvml> open_nvml(const Env& env, std::string* why) {
  auto named = env.get_bounded("BERTH_NVML_LIBRARY");
  if (!named.ok()) {
    *why = named.error().message();
    return nullptr;
  }
  std::string library = named->value_or("");
  if (library.empty()) library = kNvmlLibrary;
  SharedLibrary lib(library.c_str(), "libnvidia-ml1");
  Api api = {};
  lib.bind(api.init, "nvmlInit_v2");
  lib.bind(api.shutdown, "nvmlShutdown");
  lib.bind(api.error_string, "nvmlErrorString");
  lib.bind(api.driver_version, "nvmlSystemGetDriverVersion");
  lib.bind(api.count, "nvmlDeviceGetCount_v2");
  lib.bind(api.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  lib.bind(api.uuid, "nvmlDeviceGetUUID");
  lib.bind(api.name, "nvmlDeviceGetName");
  lib.bind(api.pci_info, "nvmlDeviceGetPciInfo_v3");
  lib.bind(api.mig_mode, "nvmlDeviceGetMigMode");
  lib.bind(api.max_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
  lib.bind(api.mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
  lib.bind(api.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!lib.error().empty()) {
    *why = lib.error();
    return nullptr;
  }
  std::lock_guard lock(nvml_mutex());
  if (auto r = api.init(); r != kSuccess) {
    *why = fmt::format("{}: nvmlInit_v2: {}", library, describe(api, r));
    return nullptr;
  }
  return std::make_shared<LoadedNvml>(api);
}

}  // namespace berth::topo
