// What a dry run adds to its report for the reader (spec 04 §7, `--dry-run`): which
// step template each step was expanded from, for a listing summarised per template
// (run_listing.h), and — asked for with `--commands` — each would-run step's command,
// rendered as it would be run, like `make -n`.
//
// A command is rendered in its staging directory, where it runs: its inputs as
// in/<name> (or a file beside the pipeline at its own path) and its outputs as
// out/<name>, the paths relative to that directory, which is the step's working
// directory (spec 04 §6). Nothing is staged, created or read to render it.
#pragma once

#include <memory>
#include <string>

#include "pipeline/graph.h"
#include "pipeline/report.h"
#include "store/object_store.h"

namespace berth::pipeline {

// Fills `rep`'s templates (RunReport::templates, template_of) from `g`, whose steps
// it reports in the same order, and with `commands` each would-run step's
// StepRecord::command (dry_run_command()).
void describe_dry_run(const Graph& g, bool commands, RunReport& rep);

// Step `s`'s command as one line a POSIX shell runs in its staging directory: a `run`
// step's script as written (`sh -c` runs it), a `cmd` step's words each shell-quoted;
// its env first as NAME=value words, and then a script as `sh -c '<script>'`, so that
// the variables reach the whole of it. A command that cannot be rendered says why
// ("cannot be rendered: …"): it would fail as that when run.
std::string dry_run_command(const Step& s);

// The store a dry run reads when the file:// store `url` names (relative to `cwd`) is
// not there yet: an empty one in memory — nothing is cached, and a dry run creates
// nothing, the store least of all. Null for a store that is there, or not file://.
std::unique_ptr<store::ObjectStore> dry_run_store(const std::string& url, const std::string& cwd);

}  // namespace berth::pipeline
