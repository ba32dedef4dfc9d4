// Collection: `berth store gc` (spec 05 §10) — what a store holds that nothing kept
// reaches and nobody used for a grace period, deleted without a coordinator while
// workers keep running.
//
// Kept, with everything they reach: the last N runs (their reports, rows/v1/runs/…),
// and the last N of each pipeline named; every entry younger than the grace period.
// A run reaches its report's steps object, and through each step its row
// (rows/v1/steps/<key>), every object its outputs name and its log; a step row
// reaches its outputs' objects and its log. Everything else older than the grace
// period goes: reports, step rows, the objects only they named (a divergence's losing
// copy among them), lease rows of keys nobody holds, corrupt copies and temporary
// files.
//
// What makes it safe against workers writing meanwhile is the store's side
// (object_store.h): every use a row is about to be built on refreshes the entry's time
// (has_object, touch_row, put_*), and ObjectStore::collect() takes an entry out of
// sight before it reads its time again. Here, the order: rows before the objects they
// name (a collector stopped half way never leaves a row naming a deleted object), and
// objects last, sparing any a row published during the collection names.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "store/object_store.h"
#include "util/clock.h"
#include "util/result.h"

namespace berth::pipeline {

struct CollectOptions {
  size_t keep_runs = 5;                // the last runs kept, and per pipeline named
  std::vector<std::string> pipelines;  // pipeline names whose last keep_runs runs are kept
  std::chrono::milliseconds grace = std::chrono::hours(24 * 7);
  bool dry_run = false;  // say what would go, delete nothing
  const Clock* clock = nullptr;  // null: the real one
};

// One entry deleted (or, in a dry run, that would be).
struct Collected {
  std::string kind;  // "run", "step row", "lease row", "object", "debris"
  std::string name;  // its address, object name or path in the store
  uint64_t bytes = 0;
};

struct CollectReport {
  size_t runs = 0;        // run reports in the store
  size_t runs_kept = 0;   // of which kept as roots (the last N, a pipeline's, young ones)
  std::vector<Collected> deleted;
  // What could not be read (a report or row that does not parse): kept, and said here.
  std::vector<std::string> problems;
  uint64_t bytes() const;
  size_t count(std::string_view kind) const;
};

// Collects `store` as the options say. Fails when the store cannot be listed or
// collected (kUnsupported for a backend that cannot be), or a deletion fails.
Result<CollectReport> collect_store(store::ObjectStore& store, const CollectOptions& options);

}  // namespace berth::pipeline
