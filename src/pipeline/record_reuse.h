// Reuse from the last settled record (spec 04 §7.1): a ready step whose entry in the
// record rests only on facts that still hold, and every step it reads from reused too,
// is finished from that entry — not keyed, looked up, materialised or run — and its
// entry goes into the report verbatim (StepRecord::recorded): the entry a rerun
// reports, `cached` as a store hit is (report.h names each way a step comes to be
// reported cached).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/key.h"
#include "pipeline/report.h"
#include "pipeline/settled.h"

namespace berth::pipeline {

// A settled record a run may reuse steps from: the record, which of its facts still
// hold (check_settled()), and its entries' text (recorded_entries()).
struct SettledReuse {
  const Settled* record = nullptr;
  const SettledCheck* check = nullptr;
  std::shared_ptr<const RecordedEntries> steps;
  // The pipeline's bytes or a tool's answer changed since the record: a step is reused
  // only when its fingerprint (key.h) is the recorded one. Otherwise the graph is the
  // record's, step for step, and names suffice.
  bool verify_fingerprints = false;
  // By [[step]] table: 1 where the table's steps have their recorded fingerprints
  // without computing them (the table's bytes and the file's head are the record's,
  // every tool answers the same, and the table discovers no foreach values from files).
  std::vector<char> same_tables;
};

// Which steps of one run were reused, and from which entries.
class RecordReuse {
 public:
  // `reuse` may be null (nothing is reused); `keep` sizes the per-step tables for a run
  // that reuses or records (a dry run of 10^6 steps keeps none).
  RecordReuse(const SettledReuse* reuse, const Graph& g, bool keep);

  // Step i's entry, when it can be finished from it: it is in the record, everything it
  // reads was reused, its facts hold and its fingerprint is the recorded one. The step
  // is then counted as reused from that entry. nullopt: it must be keyed.
  std::optional<std::string_view> entry_for(size_t i, const ToolVersions& tools);

  // Per step, the entry it was reused from (-1: none), and the fingerprint computed for
  // it ("" when not computed): what a new settled record is built from.
  std::vector<int64_t>& reused_from() { return reused_from_; }
  std::vector<std::string>& fingerprints() { return fingerprints_; }

 private:
  const SettledReuse* reuse_;
  const Graph& g_;
  std::unordered_map<std::string_view, size_t> names_;  // built when first needed
  std::vector<int64_t> reused_from_;
  std::vector<std::string> fingerprints_;
};

// The outputs a recorded entry names, when it names each of `want` with a well-formed
// object; nullopt otherwise. A reused step's outputs are read only when a step that
// reads them must be keyed: after an edit, a few of many.
std::optional<std::map<std::string, StepRecord::Output>> recorded_outputs(
    std::string_view entry, const std::vector<std::string>& want);

}  // namespace berth::pipeline
