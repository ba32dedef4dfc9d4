// A step's key (spec 04 §7): the hash of its definition, its tools' versions and the
// hash of everything it reads — each file input hashed at its stamp (input_hash.h), each
// output of an upstream step by its canonical hash — and, beside it, the basis a user
// is shown: what the key was computed from, so that "why did this run?" has an answer.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/key.h"
#include "pipeline/report.h"
#include "pipeline/settled.h"
#include "util/clock.h"
#include "util/result.h"

namespace berth::pipeline {

struct StepKey {
  std::string key;    // 64 hex digits
  std::string basis;  // StepRecord::basis (when asked for)
  // Per file input item, in input order: the stamp its hash is of (a step that runs
  // checks it again once it has read the file).
  std::vector<FileStamp> stamps;
  // For a settled record: each file input stamped with its hash known there (a racy
  // stamp with the hash a later check reads again), and whether every one was.
  std::vector<SettledFile> files;
  bool all_stamped = true;
};

// What the key of a step reads beyond the step: the outputs of the steps before it
// (by index in the graph, as the run has recorded them), the tools' versions, the
// index (may be null) and the clock its racy stamps are judged by.
struct KeyInputs {
  const Graph* graph = nullptr;
  const std::vector<StepRecord>* records = nullptr;
  const ToolVersions* tools = nullptr;
  Index* index = nullptr;
  const Clock* clock = nullptr;
  bool with_basis = true;
  bool for_record = false;  // collect `files` for a settled record
};

// Step i's key. Fails for a file input that cannot be read, or an upstream output not
// recorded yet (naming the step and input).
Result<StepKey> step_key(size_t i, const KeyInputs& in);

}  // namespace berth::pipeline
