// The results directory's manifest (spec 04 §7.5): which pipeline file owns the
// directory, and which of its files berth materialised there.
//
// <results>/.berth-results is a text file: comment lines starting with '#', then
//   pipeline <the owning pipeline file's absolute path>
//   result <step>/<output>          one per result berth put there
// It makes two promises keepable. A results directory is one pipeline's: a run of
// another pipeline file into it is refused before anything runs, rather than two
// pipelines overwriting each other's results/<step>/. And a whole run removes the
// results of steps no longer in the pipeline (they stay in the store) while never
// touching a file berth did not write: only what the manifest names is removed.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/report.h"
#include "util/result.h"

namespace berth::pipeline {

inline constexpr std::string_view kResultsManifest = ".berth-results";

struct ResultsManifest {
  std::string pipeline;              // "" when the file names none
  std::vector<std::string> results;  // "<step>/<output>", as written
};

// Parses a manifest's text; lines it does not know are skipped (a later berth's).
ResultsManifest parse_results_manifest(std::string_view text);
std::string results_manifest_text(const ResultsManifest& m);

// Checks that `results_dir` is `pipeline`'s (an absolute path): refused (kInvalidInput),
// naming both files and --results, when its manifest names another pipeline file. With
// `claim`, a directory without a manifest (new, or from before manifests) is made
// `pipeline`'s: created when missing and a manifest naming it written. Fails naming the
// directory or the manifest when it cannot be read or written.
Result<void> claim_results_dir(const std::string& results_dir, const std::string& pipeline,
                               bool claim);

// After a run that was not a dry run, its report `rep`: every result its steps have in
// place now (executed or cached, their outputs in `rep`) is added to the manifest; with
// `whole` (every step of the pipeline was selected, so `rep` names them all), the
// results the manifest names of steps `rep` does not have are removed, each step's directory with
// them once nothing else is left in it, and a notice naming those directories goes to `rep`'s
// notices and to `say`. What cannot be removed or written is a problem in `rep`.
void tidy_results_dir(const std::string& results_dir, const std::string& pipeline, RunReport& rep,
                      bool whole, const std::function<void(std::string_view)>& say);

}  // namespace berth::pipeline
