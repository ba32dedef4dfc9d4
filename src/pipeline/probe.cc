#include "pipeline/probe.h"

#include "launch/capture.h"

namespace berth::pipeline {

CaptureProbe::CaptureProbe(const Env& env) : envp_(launch::envp_of(env)) {}

Result<std::string> CaptureProbe::run(const std::vector<std::string>& argv) {
  launch::CaptureRequest req;
  req.argv = argv;
  req.envp = envp_;
  // One pipe for both streams: `srun --version` and friends answer on either, and the
  // interleaving is the order they wrote in, the same on every run.
  req.merge_stderr = true;
  req.max_output = kProbeMaxOutput;
  req.timeout = kProbeTimeout;
  BERTH_TRY(launch::Captured got, launch::capture(req));
  return std::move(got.out);
}

}  // namespace berth::pipeline
