// Configuration: a pipeline's [config] table and a run's overrides of it (spec 04 §2.4),
// as Snakemake's --config and --configfile override a workflow's configuration.
//
//   [config]
//   members = 8
//   model = "ocean"
//
// is referenced as {config.members}, {config.model} wherever a template may be, and a
// run may override a declared value: `--config members=16` (read as the declared
// type), `--configfile FILE` (TOML: NAME = value at the top level). An override of a
// name the table does not declare is an error, with the closest declared name. A value
// enters a step's key only through the text it expands into.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/template.h"
#include "util/result.h"

namespace berth::pipeline {

// A run's overrides, in the order they apply: every file, then every assignment (a
// later one of the same name wins).
struct ConfigOverrides {
  std::vector<std::string> files;        // --configfile FILE
  std::vector<std::string> assignments;  // --config NAME=VALUE
  bool empty() const { return files.empty() && assignments.empty(); }
};

// `text` read as a value of `type`, as an override gives it: an integer in decimal, a
// float (or an integer) in its shortest text, true/false, or a string verbatim. Fails
// (kInvalidInput) with what was wanted, for the caller to place.
Result<Param> config_value_of(Param::Type type, std::string_view text);

// Applies `overrides` to `config` (the pipeline's [config], name -> value). Fails
// (kInvalidInput) on an assignment without '=', a name `config` does not declare (with
// "did you mean"), a value not of the declared type, a file that cannot be read
// (kNotFound / kIo) or is not TOML of NAME = value pairs (file:line:col). `pipeline`
// names the pipeline file in messages.
Result<void> apply_config_overrides(std::map<std::string, Param>& config,
                                    const ConfigOverrides& overrides, const std::string& pipeline);

// One --configfile's text (the file at `path`, for messages) applied to `config`; fails
// as apply_config_overrides() does, naming path:line:col.
Result<void> apply_config_text(std::map<std::string, Param>& config, std::string_view text,
                               const std::string& path, const std::string& pipeline);

}  // namespace berth::pipeline
