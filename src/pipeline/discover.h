// Discovery: foreach values taken from the files present (spec 04 §3.1), as Snakemake's
// glob_wildcards finds a workflow's samples:
//
//   foreach = { sample = { glob = "data/{sample}.fastq" } }
//
// expands the step once per file matching the pattern, {sample} bound to the part of
// the name the placeholder stands for. A placeholder matches one or more characters
// other than '/' (so it stays within one path component); every other character of
// the pattern is literal, '*' and '?' included; entries starting with '.' are not
// listed unless the pattern's component starts with '.' itself. The values are the
// distinct matches, sorted bytewise. A pattern that matches nothing is an error naming
// it: a pipeline whose samples vanished should not quietly do nothing.
//
// Discovered values are values like any other: they enter names, inputs and commands,
// and so keys, through what they expand to.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pipeline/index.h"
#include "pipeline/pipeline_file.h"
#include "util/result.h"

namespace berth::pipeline {

// The file system as discovery sees it; the real one reads directories and stats.
struct DiscoveryFs {
  // The names in directory `dir` (not "." or ".."); kNotFound when it does not exist.
  std::function<Result<std::vector<std::string>>(const std::string& dir)> list;
  // Whether `path` exists.
  std::function<bool(const std::string& path)> exists;
  // `dir`'s stamp, for a settled record; nullopt when it cannot be stamped.
  std::function<std::optional<FileStamp>(const std::string& dir)> stamp;
  // A table file's bytes (foreach = "sweep.csv").
  std::function<Result<std::string>(const std::string& path)> read;
  static DiscoveryFs real();
};

// What discovery read: each directory it listed or looked in, and each table file it
// read (foreach = "sweep.csv", foreach_table.h), with its stamp before
// and after (equal unless the directory changed meanwhile), so that a run can be
// settled only while the directories still hold what they held (spec 04 §7.1).
struct Discovered {
  std::vector<std::pair<std::string, FileStamp>> dirs;
  bool stable = true;  // every directory had one stamp throughout
};

// Fills `file`'s foreach values for every { glob = … } key (StepSpec::foreach_globs)
// and every table file (StepSpec::foreach_table). Fails (kInvalidInput) naming the
// file, line:column, the step, the key and the pattern for a pattern that does not
// hold its own key, holds another placeholder, or matches nothing; (kIo) for a
// directory that cannot be read; for a table file that cannot be read or parsed,
// naming the step's foreach and what parse_table_file() says.
Result<Discovered> discover_foreach(PipelineFile& file, const DiscoveryFs& fs);

}  // namespace berth::pipeline
