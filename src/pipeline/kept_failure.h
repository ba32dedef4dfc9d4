// Kept failures: a failed step's staging directory kept, with what reproduces it, for
// `berth run --keep-failed` (spec 04 §7.4).
//
// A step that failed after it ran leaves its staging directory as it was: its inputs in
// in/, whatever it wrote in out/. With --keep-failed that directory is moved to
// <keep root>/<step>/ (the pipeline's own directory, report_file.h), replacing an earlier
// one kept for the same step, and four files are written beside in/ and out/:
//   command.sh   the command as it ran, its paths made relative to the kept directory,
//                run in that directory with exactly the environment in `env`; it ends
//                with the step's exit status
//   env          that environment, one `export NAME='value'` line each
//   exit-status  the step's exit status, one line
//   output       its stdout and stderr together, as berth kept them
// Without the flag the directory is emptied for the next step, so a failure message must
// not name it: rebase_paths() writes its paths relative to it instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::pipeline {

struct FailedStep {
  std::string name;               // the step's name: the kept directory's
  std::string stage;              // its staging directory, to be moved
  std::vector<std::string> argv;  // the command as launched, on paths in `stage`
  Env env;                        // the environment it was launched with
  int exit_code = 1;
  std::string output;  // stdout and stderr together
};

// Moves `f.stage` to `root`/<f.name>/ (replacing one there), writes the files above and
// returns the kept directory. Fails naming the path it could not make, move or write; a
// staging directory that could not be moved is left where it was.
Result<std::string> keep_failed_step(const FailedStep& f, const std::string& root);

// `text` with every path below `stage` ("<stage>/out/x") written below `to` instead
// ("<to>/out/x"); with `to` empty, relative to `stage` ("out/x").
std::string rebase_paths(std::string_view text, const std::string& stage, std::string_view to);

// The text of command.sh for `f` whose paths were rebased to the kept directory.
std::string rerun_script(const FailedStep& f);

}  // namespace berth::pipeline
