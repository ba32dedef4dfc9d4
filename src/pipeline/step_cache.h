// StepCache: what the store already holds for a step (spec 04 §7, step 2): the row of
// its key, every output object present, and its results put in place.
//
// A key found in this machine's index is taken from there; otherwise the row is read
// from the store (the shared store, for a worker) and remembered. Every object the
// row names is checked in the store, and unless asked not to, materialised under
// results/<step>/<output> as copies of their own, sharing nothing with the store (spec
// 04 §7.5) — a result already in place and unchanged since it was verified is left
// alone, so a no-op rerun stats instead of rehashing. Thread-safe as
// far as its store and index are: the executor looks up on its own thread while step
// runners materialise on theirs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/report.h"
#include "pipeline/step_runner.h"
#include "store/object_store.h"
#include "util/result.h"

namespace berth::pipeline {

// The kind of row a step's result is written under (spec 05).
inline constexpr std::string_view kStepsRow = "steps";

class StepCache {
 public:
  // `objects`: where outputs are; `rows`: where rows are (the shared store for a
  // worker). `index` may be null.
  StepCache(store::ObjectStore& objects, store::ObjectStore& rows, Index* index,
            std::string results_dir)
      : objects_(objects), rows_(rows), index_(index), results_dir_(std::move(results_dir)) {}

  // What a lookup saw, for a settled record: the objects checked, the results stamped.
  struct Seen {
    std::vector<std::string> objects;
    ResultStamps results;
  };

  // Step `s`'s record at `key` when the store has a usable result: state cached, its
  // outputs, who computed them and where; nullopt when there is no row, a row that
  // does not parse, an output missing from it or its object missing from the store —
  // and, with `materialize`, when a result cannot be put in place (a corrupt object).
  // Each reason worth knowing goes into `problems`.
  std::optional<StepRecord> lookup(const Step& s, const std::string& key, bool materialize,
                                   std::vector<std::string>& problems, Seen* seen);

  // Puts each of `r`'s outputs in place under results/<r.name>/ unless it already is.
  // A missing object is a problem; an error that stops the rest is returned.
  Result<void> materialize(const StepRecord& r, std::vector<std::string>* problems,
                           ResultStamps* seen);

  store::ObjectStore& objects() { return objects_; }
  store::ObjectStore& rows() { return rows_; }
  Index* index() { return index_; }
  const std::string& results_dir() const { return results_dir_; }

 private:
  store::ObjectStore& objects_;
  store::ObjectStore& rows_;
  Index* index_;
  std::string results_dir_;
};

// A result's stamp, without its ctime (see step_cache.cc).
Result<FileStamp> result_stamp(const std::string& path);

}  // namespace berth::pipeline
