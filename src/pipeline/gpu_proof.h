// GpuProof: the check, while a run's steps run on this node, that each used only the
// GPUs it was given (spec 02 §5). A visibility variable asks; NVML's list of the
// processes holding each device says what happened. Each step's processes that held a
// device outside its own become notices on its report: the "everyone on GPU 0" case
// made visible rather than silently slow.
//
// Only steps given NVIDIA GPUs (a step given none has the variable set empty, and
// watching every CPU step would cost an NVML scan each), only where NVML loads
// (nvml.h), only steps whose devices are all known by UUID — a step that is not
// checked for one of these reasons is said once per run; one GpuWatch per run, opened
// when the first such step starts.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launch/gpu_watch.h"
#include "place/placement.h"
#include "util/env.h"

namespace berth::pipeline {

class GpuProof {
 public:
  explicit GpuProof(const Env& env) : env_(env) {}

  // One step's watch: started() with each of its process groups as they start, then
  // finish() for what it found.
  class Step {
   public:
    void started(pid_t pgid);
    // Notices: one per process found on a device it was not given, and one when NVML
    // could not be asked.
    std::vector<std::string> finish();

   private:
    friend class GpuProof;
    std::shared_ptr<launch::GpuWatch> watch_;
    std::vector<std::string> allowed_;
    std::string label_;
    std::mutex mu_;
    std::vector<launch::GpuWatch::Ticket> tickets_;
  };

  // The watch of a step placed `p` on this node, or null when it is not checked: no
  // NVIDIA GPU given, a device not known by UUID, or no NVML (the last two said once
  // per run, as `*notice`).
  std::unique_ptr<Step> begin(const place::Placement& p, std::string label, std::string* notice);
  // The same for a process given `ids` of `variable`, `devices` their identities
  // (aligned with ids; may be shorter): a rank of berth launch --gpus-per-rank.
  std::unique_ptr<Step> begin(const std::string& variable, const std::vector<std::string>& ids,
                              const std::vector<topo::GpuIdentity>& devices, std::string label,
                              std::string* notice);

  // CUDA uses one MIG instance per process: a step given several sees only the first.
  // The notice saying so, or nothing.
  static std::optional<std::string> mig_limit_notice(const place::Placement& p);

 private:
  const Env& env_;
  std::once_flag opened_;
  std::shared_ptr<launch::GpuWatch> watch_;
  std::string why_not_;
  std::once_flag told_unnamed_;
};

}  // namespace berth::pipeline
