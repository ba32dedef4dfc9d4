// Files beside the pipeline (spec 04 §3.7): a step's command (or a `command:`
// canonicaliser of its outputs) that names a file next to the pipeline file by its
// relative path — `python3 scripts/analyze.py`, `sh prep.sh`, `Rscript plot.R` — runs
// as written, without declaring it. Each such file becomes an
// input of the step named "./<path>": hashed into its key (so editing the script reruns
// exactly the steps whose commands name it) and linked into the step's staging
// directory at that same relative path, where the command finds it.
//
// A word names a file when, taken whole (quotes removed; in a `run` script words end at
// blanks and at ; | & < > ( )), it is a relative path holding a '/' or a '.', not
// leaving the pipeline's directory, not under in/ or out/ (the staging directory's
// own), and a regular file exists there. Words built from {in.X}/{out.X} are berth's
// paths, never these.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "pipeline/graph.h"

namespace berth::pipeline {

// Remembers which paths are regular files, for one expansion: a table's steps name the
// same script 10^4 times.
class BesideFiles {
 public:
  explicit BesideFiles(std::string dir) : dir_(std::move(dir)) {}
  // Whether some step of `t` could name a file: its command's literal text, or a value
  // of a foreach key it uses, holds a '/' or a '.'. Most tables of a large grid cannot,
  // and are never scanned.
  static bool may_name_files(const StepTable& t);
  // The files beside the pipeline that `step`'s command names, as relative paths
  // (normalised, distinct, sorted).
  std::vector<std::string> named_by(const Step& step);

 private:
  bool is_file(const std::string& relative);
  std::string dir_;
  std::unordered_map<std::string, bool> known_;
};

// The input name a file beside the pipeline takes: "./" + its relative path (no
// declared input's name can hold '.' or '/').
std::string beside_input_name(const std::string& relative);
// The relative path of an input so named, or "" for any other input.
std::string beside_path_of(const std::string& input_name);

// What staging `step`'s files beside the pipeline adds at the top of its staging
// directory ("prep.sh", "scripts/"), for what it leaves there (leftovers.h).
std::vector<std::string> staged_beside(const Step& step);

}  // namespace berth::pipeline
