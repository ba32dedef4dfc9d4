// Where a run finds each step's previous basis — what its key was computed from last
// time — so that a step that must run (or a dry run explaining one) says "input
// changed: data.csv" rather than "new" (spec 04 §8).
//
// Two sources, cheapest first: a step the settled record holds finds it in its recorded
// entry, already read; any other in the last report beside the pipeline, looked up step
// by step (find_step_basis) before the whole report is parsed: most reruns after an
// edit run a few steps of many, and a no-op rerun reads nothing.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "pipeline/settled.h"

namespace berth::pipeline {

// Step name -> its basis (StepRecord::basis, as JSON), from the report at `report_path`;
// empty when there is none or it is not a report.
std::map<std::string, std::string> previous_bases(const std::string& report_path);

// One step's previous basis: from `recorded` (the text of `record`'s entries, when the
// run reuses a record), else from the report at `report_path`, read at the first
// question. nullopt when neither names the step.
std::function<std::optional<std::string>(const std::string& step)> previous_basis_finder(
    std::string report_path, std::shared_ptr<const RecordedEntries> recorded,
    const Settled* record);

}  // namespace berth::pipeline
