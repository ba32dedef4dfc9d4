// Leftovers: what a step left in its staging directory besides its declared outputs
// (spec 04 §7 step 3). The directory is emptied for the next step, so those files are
// removed; a step that wrote `plot.png` beside its table is told so, by name, rather
// than losing the file without a word. The names come from emptying the directory,
// which lists it anyway: no step pays a listing of its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace berth::pipeline {

// Of `removed` (what emptying a staging directory removed: Staging::release()), what
// the step did not declare: every top-level entry but `staged` (what berth put there
// itself: files beside the pipeline, beside.h, as "prep.sh", "scripts/"), and every
// out/ entry but its `outputs` — as "plot.png", "tmp/", "out/extra.csv", sorted.
std::vector<std::string> undeclared_files(const std::vector<std::string>& removed,
                                          const std::vector<std::string>& outputs,
                                          const std::vector<std::string>& staged);

// The step's notice for `files` (nullopt when there are none): at most `shown` named,
// then how many more.
std::optional<std::string> leftovers_notice(const std::vector<std::string>& files,
                                            size_t shown = 8);

}  // namespace berth::pipeline
