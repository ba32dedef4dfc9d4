// CaptureProbe: the real place::VersionProbe — a launcher's or a pipeline tool's version
// asked by running it through launch::capture (spec 02 §3, spec 03 §8).
//
// place detects launchers through the VersionProbe seam and starts no process itself
// (place and launch are siblings); this is where both are visible. It lives in pipeline
// rather than in the CLI because the executor asks tools for their versions the same
// way the settled check asks them again: one probe, so the two read the same text.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "place/launcher.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::pipeline {

// A version command that has not answered by then is ended (its whole process group)
// and reported as not answering.
inline constexpr std::chrono::seconds kProbeTimeout{10};
// More than this from a version command is an error, not a version.
inline constexpr size_t kProbeMaxOutput = size_t{1} << 20;

class CaptureProbe final : public place::VersionProbe {
 public:
  // The commands run with `env` as their whole environment (berth's own, from the CLI)
  // and are searched on its PATH.
  explicit CaptureProbe(const Env& env);

  // What the command printed, stdout and stderr together as written. Its exit status is
  // not looked at: a `--version` that exits 1 has still said its version. Fails as
  // launch::capture does: kNotFound for a program on no PATH entry, kIo past
  // kProbeTimeout, kRefused past kProbeMaxOutput; every message names the command.
  Result<std::string> run(const std::vector<std::string>& argv) override;

 private:
  std::vector<std::string> envp_;
};

}  // namespace berth::pipeline
