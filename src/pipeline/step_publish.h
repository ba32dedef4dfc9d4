// Publishing a step's result (spec 04 §7, step 4): the row that names its stored
// outputs and says how they were made, written only once every output is stored.
//
// A row another computation of the same key wrote first stays in force: this step
// takes that row's objects, and an output whose canonical hash differs from its own is
// a divergence (spec 06). A row that is this step's names objects a collector may have
// raced on a store without rename: each is made sure of (spec 05 §10). The step runner
// (launch_runner.h) calls these in that order; each is a function of what it is given,
// so that its tests need a MemoryStore and nothing else.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/graph.h"
#include "pipeline/key.h"
#include "pipeline/step_runner.h"
#include "place/placement.h"
#include "store/object_store.h"
#include "util/result.h"

namespace berth::pipeline {

// What a step's provenance says beyond the step, its record and its placement.
struct ProvenanceContext {
  std::string engine_version;
  std::string platform;
  std::string worker;                   // this worker's name ("" for an ordinary run)
  const ToolVersions* tools = nullptr;  // the versions of the tools steps name
  std::string start;                    // when the step started and ended, UTC
  std::string end;
};

// The provenance of step `s`'s row (spec 04 §8): its command, `inputs` as they were
// staged, its params and tools, where and on what it ran (`r`'s node and cores, `p`'s
// GPUs), and when.
nlohmann::ordered_json step_provenance(const Step& s, const StepRecord& r,
                                       const place::Placement& p, nlohmann::ordered_json inputs,
                                       const ProvenanceContext& c);

// The row of step `step` at `key`: its outputs, the object holding its output (`log`,
// left out when empty) and its provenance.
std::string step_row_text(const std::string& key, const std::string& step,
                          const nlohmann::ordered_json& outputs, const std::string& log,
                          const nlohmann::ordered_json& provenance);

// Who a provenance record says computed the outputs: its worker, else its host; ""
// when it names neither.
std::string computed_by(const nlohmann::ordered_json& prov);

// Writes `row` at `address` in `rows`. A row already there is in use again: it is
// refreshed so that a collector spares it, and one a collector took between the two
// calls is written again (spec 05 §10). Fails as the store does.
Result<store::RowPut> put_step_row(store::ObjectStore& rows, const std::string& address,
                                   const std::string& row);

// Takes the row `theirs` that another computation of `key` published first: each of
// `d.record`'s outputs takes the object that row names (where it names a valid one),
// one whose canonical hash differs is added to `d.divergences` under step `step`, and
// `d.record.computed_by` becomes the winner's when its row says. A row that does not
// parse leaves every output a divergence and the objects as they are.
void adopt_winner(const std::string& theirs, const std::string& step, const std::string& key,
                  StepResult& d);

// For a row just written by this step: every object it names is in `objects`, or is
// stored again from `files` (output name -> its file, still in staging); a directory
// output that cannot be restored is a problem in `d.problems`.
void make_sure_of_objects(store::ObjectStore& objects,
                          const std::map<std::string, std::string>& files, const std::string& step,
                          StepResult& d);

}  // namespace berth::pipeline
