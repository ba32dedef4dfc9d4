// The pipeline file: TOML read into a PipelineFile, exactly as written (spec 04 §1–§2).
//
// A PipelineFile is the file's content checked for shape — every key known, every value
// of the right type and in range, names well formed — but not yet expanded: step names,
// inputs and commands are still templates. expand() (graph.h) turns it into a Graph.
// Errors name the file, the line:column toml++ gives, the step (by its name template)
// and the key that is wrong:
//   "p.toml:9:1: step 'count-{sample}': inputs.text: must be a string or an array"
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/config.h"
#include "pipeline/template.h"
#include "util/result.h"
#include "wireup/wireup.h"

namespace berth::pipeline {

// Bounds past which a file is not a pipeline (spec 04 §2).
inline constexpr size_t kMaxPipelineFileBytes = 16 * 1024 * 1024;
inline constexpr int kMaxCores = 65536;
inline constexpr int kMaxGpus = 4096;
inline constexpr int kMaxTasks = 1 << 20;
inline constexpr int kMaxNodes = 1 << 20;
inline constexpr int64_t kMaxMemoryCapMb = int64_t{1} << 40;
inline constexpr int kMaxRetries = 100;
// The most steps one [[step]] table may expand to, and one graph may hold (§3.1); and
// so the most values one foreach key may have.
inline constexpr size_t kMaxExpandedSteps = 1'000'000;

// Where something was written: 1-based line and column; 0 when toml++ gave none.
struct SourcePos {
  uint32_t line = 0;
  uint32_t column = 0;
  bool operator==(const SourcePos&) const = default;
};

// [tools.X] (spec 04 §2.2): a program whose version text enters the key of every
// step that names it.
struct ToolSpec {
  std::string name;
  std::vector<std::string> version;  // argv that prints the version; never empty
  SourcePos pos;
  bool operator==(const ToolSpec&) const = default;
};

// One entry of a step's inputs table (spec 04 §2.3). Each value is a template for a
// file path (relative to the pipeline file's directory) or an "@step/output" reference.
struct InputSpec {
  std::string name;
  bool is_list = false;  // written as an array: {in.X} expands to every item
  std::vector<std::string> values;
  SourcePos pos;
  bool operator==(const InputSpec&) const = default;
};

// A foreach key whose values are discovered from the files present (spec 04 §3.1):
// `foreach = { sample = { glob = "data/{sample}.fastq" } }` (discover.h).
struct ForeachGlob {
  std::string pattern;  // a path template holding {key}, relative to the file's dir
  SourcePos pos;
  bool operator==(const ForeachGlob&) const = default;
};

// `foreach = "sweep.csv"`: the combinations are the rows of a table file (spec 04
// §3.1, foreach_table.h), read when the file is (discover_foreach()).
struct ForeachTableFile {
  std::string path;  // as written, relative to the file's dir unless absolute
  SourcePos pos;
  bool operator==(const ForeachTableFile&) const = default;
};

// One [[step]] table, unexpanded (spec 04 §2.3).
struct StepSpec {
  size_t index = 0;  // position among the file's [[step]] tables, from 0
  SourcePos pos;
  std::string name;  // template over the foreach keys
  // foreach key -> values; keys sorted (std::map), values in the order given.
  std::map<std::string, std::vector<std::string>> foreach;
  // foreach keys given as { glob = "…" }: their values are found by discover_foreach(),
  // which fills `foreach`, before expansion.
  std::map<std::string, ForeachGlob> foreach_globs;
  // The combinations are rows, not a grid: every key has as many values, and
  // combination i takes value i of each (an array of tables, or a table file).
  bool foreach_rows = false;
  std::optional<ForeachTableFile> foreach_table;  // rows found in a file, before expansion
  std::optional<std::string> run;               // a shell string, or
  std::optional<std::vector<std::string>> cmd;  // an argv (exactly one of the two)
  std::map<std::string, InputSpec> inputs;
  std::vector<std::string> outputs;  // in the order given; distinct
  std::set<std::string> directories;  // the outputs written "name/": stored as trees
  // String params are templates over the foreach keys and {config.X} (expanded per
  // step, graph.h); other types are their text.
  std::map<std::string, Param> params;
  std::vector<std::string> tools;  // each names a [tools.X]; distinct
  int cores = 1;
  int gpus = 0;
  // `gpus = 0.5`: a share of one device, in thousandths (spec 04 §2.3); gpus is 0.
  int gpu_share = 0;
  int tasks = 1;
  std::optional<int> nodes;              // absent: the fewest that fit
  std::optional<int64_t> memory_cap_mb;  // per node
  wireup::Mode mpi = wireup::Mode::kAuto;  // the wire-up its tasks get (spec 07)
  // Run again up to this many times after a failure, with a backoff (spec 04 §7).
  int retries = 0;
  // Ended, its whole process tree with it, when it runs longer than this.
  std::optional<std::chrono::milliseconds> timeout;
  // Where each of its own keys is written ("run", "params.rate", "env.X", "inputs.x"),
  // for errors found when it is expanded; a key taken from [defaults] has none.
  std::map<std::string, SourcePos> key_pos;
  // output -> form, as CanonicalForm::name() writes it (canonical.h); absent: "bytes"
  std::map<std::string, std::string> canonical;
  std::map<std::string, std::string> env;  // name -> value template
  bool operator==(const StepSpec&) const = default;
  // Whether its foreach values are found among files (a glob or a table file): such a
  // table may expand otherwise from the same bytes.
  bool finds_values_in_files() const { return !foreach_globs.empty() || foreach_table; }
};

// Where a pipeline file's [[step]] tables lie. A file is read table by table when it
// can be: its head (everything before the first [[step]] table) parsed alone, then each
// table alone, on two threads when there are many; and an edit of one table is seen as
// that table's bytes changing (settled.h). A piece begins at a line that is exactly
// "[[step]]" (blanks and a comment may follow) and runs to the next such line.
//
// Reading by pieces gives what reading the file whole gives whenever every piece reads
// on its own as the whole file would: the head says nothing about `step`, and each
// piece parses to one [[step]] table and nothing else. A piece that parses alone ends
// outside any string or array (else it would not parse), so the next piece begins
// where the whole file's parser would be too, at a line start, outside everything; and
// a piece whose only key is one [[step]] table defines only that table of the whole
// file's array. Where any piece does not, the file is read whole.
struct TableSpan {
  size_t offset = 0;  // where its "[[step]]" line begins
  size_t length = 0;  // up to the next table's, or the end of the file
  uint32_t line = 0;  // the 1-based line it begins on
  bool operator==(const TableSpan&) const = default;
};
struct TableSpans {
  size_t head = 0;  // the head's length: the first table's offset
  std::vector<TableSpan> tables;
};
// nullopt for a file with no "[[step]]" line.
std::optional<TableSpans> split_step_tables(std::string_view text);

struct PipelineFile {
  std::string path;  // as given to parse_pipeline()
  std::string dir;   // the directory inputs are relative to ("." for a bare file name)
  std::string name;  // [pipeline] name; default: the file's stem
  std::map<std::string, ToolSpec> tools;
  // [config] (spec 04 §2.4) with the run's overrides applied: {config.X} -> value.
  std::map<std::string, Param> config;
  std::vector<StepSpec> steps;  // in file order
  // Where each of `steps` was written, when the file was read table by table (one span
  // per step); empty when it was read whole.
  std::vector<TableSpan> tables;
};

// Parses `text`, the content of the pipeline file at `path` (used for messages and
// for `dir`). Never throws. Fails (kInvalidInput) on a TOML syntax error, an unknown
// key, a value of the wrong type or out of range, a malformed name, a step with both
// or neither of run/cmd, a canonical form for an undeclared output or that
// parse_canonical_form() refuses, or a tool that [tools] does not define.
Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path);
// The same, handing the parsed TOML document to `document` rather than freeing it: a
// process about to exit leaves it to the operating system (10^4 [[step]] tables are
// ~10^5 allocations, 12 ms to free one at a time).
Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path,
                                    std::shared_ptr<const void>& document);
// The same with --config / --configfile overrides of its [config] (config.h).
Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path,
                                    std::shared_ptr<const void>& document,
                                    const ConfigOverrides& overrides);

// Part of the file: its head and the [[step]] tables `only` (indices into
// split.tables, ascending), each read alone as parse_pipeline() reads them. The
// PipelineFile's steps are those tables' (each StepSpec::index its place in the whole
// file), its `tables` every table's span. nullopt when any of them does not read alone,
// for any reason: what is wrong is for reading the whole file to say. For a file whose
// other tables are known to be what they were (an edited file, settled.h).
std::optional<PipelineFile> read_step_tables(std::string_view text, const std::string& path,
                                             const TableSpans& split,
                                             const std::vector<size_t>& only,
                                             std::shared_ptr<const void>& document);


// Name rules (spec 04 §2.1). A step name (after expansion): [A-Za-z0-9_.+-]+, not
// starting with '.'. An input, output, param or tool name: [A-Za-z0-9_-]+. A foreach
// key: [A-Za-z0-9_]+ and none of cores, gpus, tasks, nodes, in, out, param.
// Each returns what is wrong, or nullopt when the name is good.
std::optional<std::string> step_name_problem(std::string_view name);
std::optional<std::string> item_name_problem(std::string_view name);
// An output's name: [A-Za-z0-9_.-]+, not starting with '.' (`table.csv`: a file's name,
// as results/<step>/ holds it). Given with a '/' after it (`plots/`), the name declares a
// directory output; this is the name without it.
std::optional<std::string> output_name_problem(std::string_view name);
std::optional<std::string> foreach_key_problem(std::string_view name);

}  // namespace berth::pipeline
