// The GPU check of a run's steps (gpu_proof.h).
#include "pipeline/gpu_proof.h"

#include <fmt/format.h>

namespace berth::pipeline {

void GpuProof::Step::started(pid_t pgid) {
  auto ticket = watch_->watch(pgid, allowed_, label_);
  std::lock_guard<std::mutex> lock(mu_);
  tickets_.push_back(ticket);
}

std::vector<std::string> GpuProof::Step::finish() {
  std::vector<launch::GpuWatch::Ticket> tickets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tickets.swap(tickets_);
  }
  std::vector<std::string> out;
  for (auto t : tickets) {
    launch::GpuWatchReport report = watch_->finish(t);
    for (const auto& f : report.findings) {
      out.push_back("GPU check: " + launch::describe_finding(f, allowed_));
    }
    if (!report.error.empty()) {
      out.push_back(fmt::format("GPU check: NVML could not be asked which devices it used: {}",
                                report.error));
    }
  }
  return out;
}

std::unique_ptr<GpuProof::Step> GpuProof::begin(const place::Placement& p, std::string label,
                                                std::string* notice) {
  return begin(p.gpu_variable, p.gpu_ids, p.gpu_devices, std::move(label), notice);
}

std::unique_ptr<GpuProof::Step> GpuProof::begin(const std::string& variable,
                                                const std::vector<std::string>& ids,
                                                const std::vector<topo::GpuIdentity>& devices,
                                                std::string label, std::string* notice) {
  if (variable != "CUDA_VISIBLE_DEVICES" || ids.empty()) return nullptr;
  std::vector<std::string> allowed;
  for (size_t g = 0; g < ids.size(); ++g) {
    const std::string& id = ids[g];
    if (id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0) {
      allowed.push_back(id);
    } else if (g < devices.size() && !devices[g].uuid.empty()) {
      allowed.push_back(devices[g].uuid);
    } else {
      // A device it cannot name: nothing could be judged.
      std::call_once(told_unnamed_, [&] {
        if (notice) {
          *notice = fmt::format(
              "GPU check: which devices were used is not checked where the driver's files "
              "give a device no UUID (GPU {} here)",
              id);
        }
      });
      return nullptr;
    }
  }
  bool first = false;
  std::call_once(opened_, [&] {
    first = true;
    std::string why;
    auto nvml = topo::open_nvml(env_, &why);
    if (nvml) {
      watch_ = std::make_shared<launch::GpuWatch>(std::move(nvml));
    } else {
      why_not_ = why;
    }
  });
  if (!watch_) {
    if (first && notice) {
      *notice = fmt::format(
          "GPU check: which devices were used is not checked, because NVML is not "
          "available ({})",
          why_not_);
    }
    return nullptr;
  }
  auto step = std::make_unique<Step>();
  step->watch_ = watch_;
  step->allowed_ = std::move(allowed);
  step->label_ = std::move(label);
  return step;
}

std::optional<std::string> GpuProof::mig_limit_notice(const place::Placement& p) {
  size_t migs = 0;
  for (const std::string& id : p.gpu_ids) migs += id.rfind("MIG-", 0) == 0 ? 1 : 0;
  if (migs < 2) return std::nullopt;
  return fmt::format(
      "given {} MIG instances: CUDA uses one MIG instance per process, so each of its "
      "processes sees only the first of them",
      migs);
}

}  // namespace berth::pipeline
