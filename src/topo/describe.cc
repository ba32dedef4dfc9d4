#include "topo/describe.h"

#include "topo/mig.h"

namespace berth::topo {
namespace {

bool is_real_root(const std::string& root) {
  return root.empty() || root.find_first_not_of('/') == std::string::npos;
}

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

Result<NodeResources> describe(const CpuReader& cpus, const Env& env,
                               const DescribeOptions& options) {
  NodeResources n;
  BERTH_TRY(CpuReading reading, cpus.read());
  CoreSelection s = select_cores(reading, options.configured_cores);
  n.usable_core_ids = std::move(s.usable_core_ids);
  n.threads_per_core = s.threads_per_core;
  if (options.configured_cores && *options.configured_cores > 0) {
    n.configured_cores = options.configured_cores;
  }
  n.cores_provenance = reading.source;
  n.core_basis = s.basis;
  n.affinity_cores = s.affinity_cores;
  append(n.diagnostics, reading.diagnostics);
  append(n.diagnostics, s.diagnostics);

  BERTH_TRY(n.gpus, read_gpus(options.root, env));
  append(n.diagnostics, n.gpus.diagnostics);
  BERTH_TRY(n.gpu_devices, read_gpu_identities(options.root, n.gpus.vendor));
  if (n.gpus.vendor == GpuVendor::kNvidia) {
    // NVML describes the node it runs on: a tree under another root is described by
    // its files alone, unless a test names the NVML library to ask.
    auto nvml = [&](std::string* why) -> std::shared_ptr<Nvml> {
      if (is_real_root(options.root) || env.has("BERTH_NVML_LIBRARY")) return open_nvml(env, why);
      *why = "the node's files are read under " + options.root;
      return nullptr;
    };
    size_t before = n.gpus.diagnostics.size();
    BERTH_CHECK(describe_mig(options.root, nvml, n.gpus, n.gpu_devices));
    n.diagnostics.insert(n.diagnostics.end(),
                         n.gpus.diagnostics.begin() + static_cast<std::ptrdiff_t>(before),
                         n.gpus.diagnostics.end());
  }
  BERTH_TRY(n.memory, read_memory(options.root, env));
  append(n.diagnostics, n.memory.diagnostics);
  return n;
}

std::unique_ptr<CpuReader> make_cpu_reader(const std::string& root,
                                           std::optional<std::vector<int>> affinity) {
  if (is_real_root(root) && !affinity) return std::make_unique<HwlocCpuReader>();
  return std::make_unique<SysfsCpuReader>(root.empty() ? "/" : root, std::move(affinity));
}

}  // namespace berth::topo
