// Fan-in: an input that collects the outputs of many steps (spec 04 §3.6), as
// Snakemake's expand() and Nextflow's collect / groupTuple do:
//
//   inputs = { parts = "@count-*/counts" }         # every count step's counts
//   inputs = { parts = "@split-{sample}-*/o" }     # this sample's pieces only
//
// A reference whose step (between '@' and the last '/') holds '*', '?' or '[' is a
// shell-style pattern (fnmatch(3)) over expanded step names, as targets are (spec 04
// §7.2). It is one list, however it was written: every matching step's output, in
// expansion order (file order, then foreach order). The consumer's own placeholders are
// expanded first. A pattern that matches no step, or matches one without that output,
// is an error naming both.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/graph.h"
#include "util/result.h"

namespace berth::pipeline {

// Whether `reference` ("@step/output", or a template of one) is a fan-in.
bool is_fan_in(std::string_view reference);

// Replaces every fan-in item of every step in `steps` (in expansion order, their
// references not yet resolved) by one "@name/output" item per matching step. Fails
// (kNotFound) naming the step, the input and the pattern when it matches nothing, or
// matches a step without the output.
// `origin` says where a step's input is written, for messages.
Result<void> expand_fan_ins(
    std::vector<Step>& steps,
    const std::function<std::string(const Step&, const std::string& input)>& origin);

}  // namespace berth::pipeline
