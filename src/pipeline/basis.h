// A step's basis: what its key was computed from, as a report keeps it (spec 04 §8) and
// a dry run compares it with the last run's (explain.h) —
//   {"command":…,"recipe":…,"inputs":…,"tools":…[,"params":…][,"config":…]}
// written as nlohmann dumps an ordered_json, straight into text and allocated once at
// its size: a run keeps one per step. "params" (name -> text) holds the params whose
// text varies from step to step (templates over foreach keys or config: a sweep's),
// "config" (name -> text) the [config] values its templates use, each there when not
// empty, so that a dry run can say `param 'rate' changed (0.1 -> 0.01)`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/key.h"

namespace berth::pipeline {

// `recipe` is the key of the step with no input hashes nor tool versions (16 hex
// digits of it are kept); `inputs` and `tools` are the basis's objects, as JSON text.
std::string step_basis(const Step& step, const StepText& text, std::string_view recipe,
                       std::string_view inputs, std::string_view tools);

// The basis's "inputs" object, {"name":[["text","form sha256:..."],...],...}, written
// as nlohmann would dump it, straight into text: input() opens each input, item() adds
// one of its items (as written, and its tagged hash).
class BasisInputs {
 public:
  void input(std::string_view name);
  void item(std::string_view text, std::string_view tagged);
  std::string finish();

 private:
  std::string out_ = "{";
  bool open_ = false;
};

// The basis's "tools" object: each of `tools` with 16 hex digits of the hash of its
// version text (empty when it was not read).
std::string basis_tools(const std::vector<std::string>& tools, const ToolVersions& versions);

}  // namespace berth::pipeline
