// A step's directory output (spec 04 §2.3): `outputs = ["plots/"]` is a directory the
// step fills with any number of files, stored as a tree (store/tree.h) whose manifest
// is the output's object, with the form "tree". What the pipeline does with one
// beyond the store: checking a cached tree whole, and keeping its result in place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/index.h"
#include "pipeline/report.h"
#include "pipeline/step_runner.h"
#include "store/object_store.h"
#include "util/result.h"

namespace berth::pipeline {

// The form of a directory output: not a canonical form a file can be given
// (canonical.h refuses it), the marker that an output's object is a manifest.
inline constexpr std::string_view kTreeForm = "tree";

inline bool is_tree(const StepRecord::Output& o) { return o.form == kTreeForm; }

// Whether every file of the tree `manifest` is in `objects` (each has_object refreshes
// it, spec 05 §10: a cache hit names them all). The files go into *children when given.
// A manifest that cannot be read is a problem, and false.
bool tree_whole(store::ObjectStore& objects, const std::string& manifest,
                std::vector<std::string>* children, std::vector<std::string>& problems);

// After a step's row naming the tree `manifest` is published: every file of it that a
// collector took meanwhile is stored again from `dir`, the directory it was stored
// from, still in staging (spec 05 §10). Not put_tree() again: storing made its files
// read-only, execute bits gone, so a second manifest could differ. A manifest taken
// itself cannot be rebuilt: an error, and the step is recomputed next time.
Result<void> restore_tree(store::ObjectStore& objects, const std::string& manifest,
                          const std::string& dir);

// Puts the tree result `rec` at `dest` (results/<step>/<output>/), replacing whatever
// is there, whole — unless `index` shows every directory and file of it unchanged since
// it was put there, when nothing is touched. Every file and directory is stamped into
// `seen` (a directory's stamp changes when a file is added to it or removed). What
// cannot be read from the store is a problem naming `step`; an I/O error is an error.
Result<void> materialize_tree_result(store::ObjectStore& objects, Index* index,
                                     std::string_view step, const StepRecord::Output& rec,
                                     const std::string& dest, std::vector<std::string>* problems,
                                     ResultStamps* seen);

}  // namespace berth::pipeline
