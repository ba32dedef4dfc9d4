// Leftovers: what a step left in its staging directory besides its declared outputs
// (spec 04 §7 step 3). The directory is emptied for the next step, so those files are
// removed; a step that wrote `plot.png` beside its table is told so, by name, rather
// than losing the file without a word.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace berth::pipeline {

// The entries of `stage` other than in/, out/ and `staged` (what berth put there
// itself: files beside the pipeline, beside.h), and of out/ other than `outputs`, as
// paths relative to `stage` ("plot.png", "tmp/", "out/extra.csv"; a directory ends in
// '/'), sorted. Entries that cannot be listed are left out.
std::vector<std::string> undeclared_files(const std::string& stage,
                                          const std::vector<std::string>& outputs,
                                          const std::vector<std::string>& staged = {});

// The step's notice for `files` (nullopt when there are none): at most `shown` named,
// then how many more.
std::optional<std::string> leftovers_notice(const std::vector<std::string>& files,
                                            size_t shown = 8);

}  // namespace berth::pipeline
