// Reading a step row on a cache hit (spec 05 §3): each output's record and who computed
// it, and nothing else.
//
// A no-op rerun reads one row per step. The row is JSON with the provenance record in
// it (command, every input, params, times), none of which a cache hit needs; building
// the whole document to read five strings was most of a rerun's cost. This reads the row
// with nlohmann's SAX interface and keeps only what is asked for. A row is any bytes a
// store returned — another build's format, a torn write, a hostile writer — so every
// input is safe: it yields a digest or nullopt, never a crash (fuzzed:
// tests/fuzz/fuzz_step_row.cc, against a full parse).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace berth::pipeline {

struct StepRowDigest {
  // output name -> field ("object", "form", "canonical", ...) -> its value, for every
  // string-valued field of an output record that is a JSON object.
  std::map<std::string, std::map<std::string, std::string>> outputs;
  // Outputs whose record is not an object (a string, a number, an array): unusable.
  std::set<std::string> malformed;
  // The provenance record's string fields of these names; empty when absent.
  std::string host, cores, worker;
  // The top-level "log": the object holding the step's output; empty when absent.
  std::string log;
};

// nullopt when `text` is not one JSON object with an "outputs" member that is an object.
std::optional<StepRowDigest> read_step_row(std::string_view text);

}  // namespace berth::pipeline
