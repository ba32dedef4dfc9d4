// MIG instances as GPUs (mig.h).
#include "topo/mig.h"

#include <fmt/format.h>

#include <algorithm>

#include "topo/tree.h"
#include "util/strings.h"

namespace berth::topo {

void apply_mig(const std::vector<NvmlGpu>& nvml, Gpus& gpus, std::vector<GpuIdentity>& devices) {
  std::vector<GpuIdentity> out;
  bool changed = false;
  for (const GpuIdentity& d : devices) {
    auto g = std::find_if(nvml.begin(), nvml.end(), [&](const NvmlGpu& n) {
      return (!d.bus.empty() && n.bus == d.bus) || (!d.uuid.empty() && n.uuid == d.uuid);
    });
    if (g == nvml.end() || !g->mig_on || g->migs.empty()) {
      out.push_back(d);
      continue;
    }
    changed = true;
    for (const NvmlMig& m : g->migs) {
      GpuIdentity e = d;
      e.id = m.uuid;
      e.uuid = m.uuid;
      e.model = m.name.empty() ? d.model : m.name;
      out.push_back(std::move(e));
    }
  }
  if (!changed) return;
  if (gpus.provenance.rfind("env ", 0) == 0) {
    // A variable's ids are the scheduler's word, in its own numbering: they may name
    // the whole GPUs (an index) or instances (a MIG UUID), so both stay findable.
    for (GpuIdentity& e : out) {
      if (e.id.rfind("MIG-", 0) == 0) devices.push_back(std::move(e));
    }
    return;
  }
  devices = std::move(out);
  gpus.ids.clear();
  for (const GpuIdentity& d : devices) gpus.ids.push_back(d.id);
  gpus.provenance += " and NVML (MIG instances)";
  gpus.node_count = static_cast<int>(devices.size());
}

Result<std::vector<int>> gpus_with_mig_instances(const std::string& root) {
  constexpr std::string_view kCaps = "/proc/driver/nvidia/capabilities";
  BERTH_TRY(auto entries, tree::list_dir(tree::under(root, kCaps)));
  std::vector<int> out;
  for (const std::string& e : entries.value_or(std::vector<std::string>())) {
    if (e.rfind("gpu", 0) != 0) continue;
    auto n = str::parse_uint(std::string_view(e).substr(3), 1 << 16);
    if (!n.ok()) continue;
    BERTH_TRY(auto mig, tree::list_dir(tree::under(root, fmt::format("{}/{}/mig", kCaps, e))));
    if (!mig) continue;
    bool instances = std::any_of(mig->begin(), mig->end(),
                                 [](const std::string& m) { return m.rfind("gi", 0) == 0; });
    if (instances) out.push_back(static_cast<int>(*n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<void> describe_mig(const std::string& root, const OpenNvml& open_nvml, Gpus& gpus,
                          std::vector<GpuIdentity>& devices) {
  if (gpus.vendor != GpuVendor::kNvidia) return Ok{};
  BERTH_TRY(std::vector<int> mig, gpus_with_mig_instances(root));
  if (mig.empty()) return Ok{};
  std::string why_no_nvml;
  std::shared_ptr<Nvml> nvml = open_nvml(&why_no_nvml);
  if (nvml) {
    auto seen = nvml->gpus();
    if (!seen.ok()) {
      gpus.diagnostics.push_back(
          fmt::format("NVML: {}; MIG instances, if any, are not known", seen.error().message()));
      return Ok{};
    }
    apply_mig(*seen, gpus, devices);
    return Ok{};
  }
  std::vector<std::string> names;
  for (int g : mig) names.push_back(std::to_string(g));
  gpus.diagnostics.push_back(fmt::format(
      "GPU(s) {} are in MIG mode with instances (the driver's files say), but only NVML names "
      "them and it is not available ({}): each is given whole",
      str::join(names, ", "), why_no_nvml));
  return Ok{};
}

}  // namespace berth::topo
