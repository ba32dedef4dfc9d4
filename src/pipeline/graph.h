// The graph: a pipeline file expanded into concrete steps in a topological order
// (spec 04 §3).
//
// expand() does everything that can be checked before anything runs: the foreach
// cartesian product, name templates, placeholders, input files that must exist,
// "@step/output" references, duplicate names and cycles. A Graph is a plain value;
// the executor reads it, keys each step (key.h) and renders its command for a staging
// directory (command.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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
  // The name it has in a staging directory (spec 04 §6): a file's own name, extension
  // included (`reads.fq.gz`), or the output's name. It enters the step's key.
  std::string staged_name() const;
};

struct Input {
  std::string name;
  bool is_list = false;  // {in.X} expands to every item (spec 04 §3)
  std::vector<InputItem> items;
};

// Strings held end to end in one buffer: a foreach key's values, up to 10^6 of them,
// which as std::strings were 32 bytes each before any of their text.
class TextList {
 public:
  TextList() = default;
  explicit TextList(const std::vector<std::string>& texts);
  size_t size() const { return ends_.size(); }
  std::string_view operator[](size_t i) const {
    size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(text_).substr(begin, ends_[i] - begin);
  }

 private:
  std::string text_;
  std::vector<size_t> ends_;  // text i is [ends_[i - 1], ends_[i])
};

// What every step one [[step]] table expands to has in common, held once for all of
// them: a table may expand to 10^6 steps (spec 04 §3.1), which then share it rather
// than each keeping a copy.
struct StepTable {
  std::string where;          // "p.toml:9:1: step 'count-{sample}'"
  std::string name_template;  // "count-{sample}"
  // The foreach keys, sorted, and each one's values in the order given.
  std::vector<std::string> keys;
  std::vector<TextList> values;
  // Combination i takes value i of every key (combinations written out, or a table
  // file's rows), rather than the grid's mixed radix (spec 04 §3.1).
  bool rows = false;
  std::vector<std::string> outputs;              // in the order the file gives
  // every output -> its form ("tree" for a directory output, dir_output.h)
  std::map<std::string, std::string> canonical;
  // Its params whose text is the same for every step; those that use foreach keys are
  // in param_templates (name -> the param's compiled text), expanded per step.
  std::map<std::string, Param> params;
  std::map<std::string, Template> param_templates;
  // The [config] values its templates use, name -> text, sorted: a dry run names the
  // one that changed (explain.h).
  std::vector<std::pair<std::string, std::string>> config_used;
  std::vector<std::string> tools;  // sorted
  // The command and env, compiled: each step expands them with its own foreach values
  // when asked (Step::command(), Step::env()), rather than keeping a copy of each.
  std::vector<Template> command;
  std::vector<std::pair<std::string, Template>> env;  // sorted by variable
};

// One concrete step. Its command, when asked for, is expanded except for {in.X} and
// {out.X}, which stay symbolic until render_command() is given a staging directory's
// paths.
struct Step {
  std::string name;  // expanded; unique in the graph
  // The table it was expanded from; `outputs`, `canonical` and `tools` are the table's
  // (declared before them, so that it is there when they are bound).
  std::shared_ptr<const StepTable> table = empty_table();
  size_t spec = 0;           // index of its [[step]] table in the file
  uint32_t combination = 0;  // which of the table's foreach combinations, in order (§3.1)
  bool shell = false;        // run: true (one word, a script for sh -c); cmd: false
  // Known only by its entry in the settled record (settled.h): a step of a table not
  // read again, in a graph made from a few of the file's tables (an edit's). It has
  // its name, table, combination and deps, nothing else, and is reused, never run.
  bool from_record = false;
  std::map<std::string, Input> inputs;
  const std::vector<std::string>& outputs = table->outputs;
  const std::map<std::string, std::string>& canonical = table->canonical;
  const std::vector<std::string>& tools = table->tools;
  // (The small fields together: a graph holds 10^6 steps.)
  int cores = 1;
  int gpus = 0;
  int gpu_share = 0;  // thousandths of one device, for `gpus = 0.5`; gpus is 0 then
  int tasks = 1;
  wireup::Mode mpi = wireup::Mode::kAuto;
  int retries = 0;  // neither this nor timeout enters the key
  std::optional<int> nodes;
  std::optional<int64_t> memory_cap_mb;
  std::optional<std::chrono::milliseconds> timeout;
  std::vector<size_t> deps;  // steps whose outputs this one reads; sorted, distinct

  Step() = default;
  explicit Step(std::shared_ptr<const StepTable> t) : table(std::move(t)) {}
  // Copied and moved with its table; the references follow (they are the table's).
  Step(const Step&) = default;
  Step(Step&&) noexcept = default;
  Step& operator=(const Step&) = delete;
  Step& operator=(Step&&) = delete;

  // Its command: run, exactly one word; cmd, the argv, never empty. Expanded on each
  // call.
  std::vector<Word> command() const;
  // Its env: variable -> value. Expanded on each call.
  std::map<std::string, Word> env() const;
  // Its params, each string param's placeholders expanded for it (spec 04 §3.2).
  std::map<std::string, Param> params() const;
  // Its foreach bindings: key -> value.
  std::map<std::string, std::string> bindings() const;
  // For messages: "p.toml:9:1: step 'count-{sample}' ('count-a')".
  std::string origin() const;

 private:
  static const std::shared_ptr<const StepTable>& empty_table();
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

// Where the steps of a whole graph lie, for expanding a few of its tables
// (expand_tables()): the index of the step named so (nullopt: none), and the outputs
// of the step at an index.
struct GraphPlaces {
  std::function<std::optional<size_t>(std::string_view name)> index_of;
  std::function<std::vector<std::string>(size_t index)> outputs_of;
};

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
// The same, taking what it can from `file` rather than copying it (a foreach key's
// 10^6 values).
Result<Graph> expand(PipelineFile&& file, const FileExists& exists);

// The steps of `file`'s tables alone (a file read in part, read_step_tables()), checked
// as expand() checks them, in file order and not ordered by what they read: each
// "@step/output" reference, to one of them or to any other step `places` knows, is
// resolved to the step's index in the whole graph, and so are the deps. For a graph
// whose other steps are known otherwise (Step::from_record). With `only`, a table's
// foreach combination is expanded only when only(table, combination) says so.
Result<std::vector<Step>> expand_tables(
    PipelineFile&& file, const FileExists& exists, const GraphPlaces& places,
    const std::function<bool(size_t table, uint32_t combination)>* only = nullptr);

}  // namespace berth::pipeline
