// The graph: a pipeline file expanded into concrete steps in a topological order
// (spec 04 §3).
//
// expand() does everything that can be checked before anything runs: the foreach
// cartesian product, name templates, placeholders, input files that must exist,
// "@step/output" references, duplicate names and cycles. A Graph is a plain value;
// the executor reads it, keys each step (key.h) and renders its command for a staging
// directory (command.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/pipeline_file.h"
#include "pipeline/template.h"
#include "util/result.h"

namespace berth::pipeline {

// One item of an expanded input: a file, or another step's output.
struct InputItem {
  enum class Kind { kFile, kStepOutput };
  Kind kind = Kind::kFile;
  std::string text;    // as written, after expansion: "data/a.txt", "@count-a/counts"
  std::string path;    // kFile: the file to read (a relative one joined to the file's dir)
  size_t step = 0;     // kStepOutput: index into Graph::steps
  std::string output;  // kStepOutput: the output's name
};

struct Input {
  std::string name;
  bool is_list = false;  // {in.X} expands to every item (spec 04 §3)
  std::vector<InputItem> items;
};

// One concrete step. Its command is expanded except for {in.X} and {out.X}, which
// stay symbolic until render_command() is given a staging directory's paths.
struct Step {
  std::string name;    // expanded; unique in the graph
  std::string origin;  // for messages: "p.toml:9:1: step 'count-{sample}' ('count-a')"
  size_t spec = 0;     // index of its [[step]] table in the file
  std::map<std::string, std::string> bindings;  // foreach key -> value
  bool shell = false;         // run: true (one word, a script for sh -c); cmd: false
  std::vector<Word> command;  // run: exactly one word; cmd: the argv, never empty
  std::map<std::string, Input> inputs;
  std::vector<std::string> outputs;              // in the order the file gives
  std::map<std::string, std::string> canonical;  // every output -> its form
  std::map<std::string, Param> params;
  std::vector<std::string> tools;  // sorted
  std::map<std::string, Word> env;
  int cores = 1;
  int gpus = 0;
  int tasks = 1;
  std::optional<int> nodes;
  std::optional<int64_t> memory_cap_mb;
  wireup::Mode mpi = wireup::Mode::kAuto;
  std::vector<size_t> deps;  // steps whose outputs this one reads; sorted, distinct
};

struct Graph {
  std::string path;  // the pipeline file
  std::string dir;   // what relative input paths are relative to
  std::string name;  // [pipeline] name
  std::map<std::string, ToolSpec> tools;
  // Every step after all of its deps. Ties are broken by file order, then foreach
  // order, so the order is a function of the file alone.
  std::vector<Step> steps;

  // The index of the step named `name`, or nullopt.
  std::optional<size_t> find(std::string_view step_name) const;
};

// Bounds: the most steps one [[step]] table may expand to, and one graph may hold.
inline constexpr size_t kMaxExpandedSteps = 1'000'000;

// Answers whether an input file exists; real runs pass files::exists, tests a fake.
using FileExists = std::function<bool(const std::string& path)>;

// Expands `file` into a Graph. Fails (kInvalidInput, or kNotFound for a missing input
// file) with a message naming the file, line:column, the step — by its name template
// and, once known, its expanded name — and what is wrong: a placeholder that names
// nothing, an expanded name that is malformed or also names another step (both
// origins), a missing input file (the input and the path), a reference to a step or
// output that does not exist, a list input inside a larger cmd word, or a cycle (the
// steps around it, in data-flow order).
Result<Graph> expand(const PipelineFile& file, const FileExists& exists);

// Keeps the steps named by `targets` and every step they read from, transitively, in
// the graph's order (a run of part of a pipeline: berth.run(..., targets=[...])).
// Fails (kNotFound) on a name that is no step of the graph, naming it; an empty
// `targets` keeps every step.
Result<void> select_steps(Graph& graph, const std::vector<std::string>& targets);

}  // namespace berth::pipeline
