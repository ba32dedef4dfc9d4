// Step keys: the name of what a step computes (spec 04 §5).
//
// A step key is the SHA-256 of length-prefixed fields that fix what the step means:
// the key format version, its command (expanded except for {in.X}/{out.X}, which are
// kept as the input's or output's *name*, never a path — so the key does not depend on
// where the staging directory is, but does depend on which input goes where), its
// environment, its params, each input's canonical hash tagged with its
// canonicalisation, its outputs with their canonical forms, and each tool's version
// text. Nothing else enters it: not the step's name, not the pipeline file's path, not
// cores/gpus/tasks/nodes/memory (a step whose result depends on one references it as
// {cores} etc., and the expanded number is then part of the command text), not the
// order keys were written in the file.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/canonical.h"
#include "pipeline/graph.h"
#include "util/result.h"

namespace berth::pipeline {

// The key format version: the first field of every key. Bump it whenever the fields or
// their encoding change, so that old rows are never mistaken for new ones.
inline constexpr std::string_view kKeyFormat = "berth.step-key.v2";

// input name -> one canonical hash (canonical.h: the form's name and "sha256:<hex>")
// per item, in the input's item order. A file input is hashed under "bytes"; a step
// output under the form its producer declares (Step::canonical).
using InputHashes = std::map<std::string, std::vector<CanonicalHash>>;
// tool name -> the text its version command printed.
using ToolVersions = std::map<std::string, std::string>;

// The bytes that are hashed (spec 04 §5.1), for tests and `--explain`-style tools.
// Fails (kInvalidInput) when `inputs` lacks an input of the step or has the wrong
// number of items for one, or `tools` lacks a tool the step names. Extra entries in
// either map are ignored: they are not part of this step.
Result<std::string> key_preimage(const Step& step, const InputHashes& inputs,
                                 const ToolVersions& tools);

// SHA-256 of key_preimage() as 64 lower-case hex digits; fails as key_preimage() does.
Result<std::string> key_of(const Step& step, const InputHashes& inputs, const ToolVersions& tools);

// A step's fingerprint (settled.h): the SHA-256 of key_preimage() with each input item
// named by where it comes from — a file by its text as written and its path, another
// step's output by that step's name and the output — in place of its hash. Two steps
// of one fingerprint, whose file inputs hold the same bytes and whose upstream steps
// have the same outputs, have one key and one basis (what a report says the key was
// computed from). "" when the step cannot be keyed (a tool without a version).
std::string step_fingerprint(const Step& step, const Graph& graph, const ToolVersions& tools);

// A step's command and env, expanded once (Step::command() and Step::env() expand on
// each call), for more than one key of one step: the executor's key and its recipe.
struct StepText {
  explicit StepText(const Step& s) : command(s.command()), env(s.env()), params(s.params()) {}
  std::vector<Word> command;
  std::map<std::string, Word> env;
  std::map<std::string, Param> params;
};
Result<std::string> key_preimage(const Step& step, const StepText& text,
                                 const InputHashes& inputs, const ToolVersions& tools);
Result<std::string> key_of(const Step& step, const StepText& text, const InputHashes& inputs,
                           const ToolVersions& tools);

}  // namespace berth::pipeline
