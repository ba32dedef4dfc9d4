// Canonical forms of a step's output: what an output *means*, as bytes, so that a
// downstream step key is built on meaning rather than on incidental bytes (early
// cutoff; spec 04 §4, §5.2). Two outputs with equal canonical bytes are the same
// result: the step that consumes them is not rerun, and two workers that computed one
// key agree even when their bytes differ.
//
// Forms (the name is what a pipeline file writes, `canonical = { out = "json" }`):
//   bytes         the bytes themselves (the default).
//   lines-sorted  split on '\n' (a missing final newline is supplied first, so "a" and
//                 "a\n" are one line), lines sorted bytewise (duplicates kept), each
//                 written back followed by '\n'. Empty input stays empty. '\r' is an
//                 ordinary byte.
//   json          parsed (RFC 8259, UTF-8) and written back compactly: object keys
//                 sorted bytewise, no whitespace, strings with nlohmann's escapes (only
//                 '"', '\\' and control characters; other UTF-8 as is), no trailing
//                 newline. Numbers: an integer literal stays an integer ("1"), one with
//                 a fraction or exponent is a double written by nlohmann's shortest
//                 round-trip form ("1.0", "1e2" -> "100.0"), so 1 and 1.0 differ. A
//                 duplicate key keeps its last value. Nesting deeper than
//                 kMaxJsonDepth is refused.
//   command:ARGV  the output of a user's canonicaliser command (stdin: the bytes). The
//                 pipeline library supplies the runner (CommandHook); ARGV is a JSON
//                 array of strings or whitespace-separated words.
//
// The canonical hash is "sha256:<hex>" of the canonical bytes; for the bytes form it
// is therefore the object's own name. A hash is only meaningful beside its form, so
// CanonicalHash carries both and tagged() writes them together for step keys.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::pipeline {

inline constexpr int kMaxJsonDepth = 512;

struct CanonicalForm {
  enum class Kind { kBytes, kLinesSorted, kJson, kCommand };
  Kind kind = Kind::kBytes;
  std::vector<std::string> argv;  // kCommand only, never empty

  static CanonicalForm command(std::vector<std::string> argv);
  // "bytes", "lines-sorted", "json", or "command:" + argv as a JSON array.
  std::string name() const;
  bool operator==(const CanonicalForm&) const = default;
};

// Parses a form's name as a pipeline file writes it. kInvalidInput naming the text
// for an unknown form or a command with no words.
Result<CanonicalForm> parse_canonical_form(std::string_view text);

// Runs a user's canonicaliser: argv with `bytes` on stdin, returning its stdout or an
// error naming the command. Supplied by the pipeline library, which owns processes.
using CommandHook = std::function<Result<std::string>(const std::vector<std::string>& argv,
                                                      std::string_view bytes)>;

// The canonical bytes of `bytes` under `form`. Fails with kInvalidInput when the bytes
// are not in the form (json that does not parse, naming the position), kUnsupported
// for a command form without a hook, or whatever the hook returns.
Result<std::string> canonicalize(const CanonicalForm& form, std::string_view bytes,
                                 const CommandHook& hook = nullptr);

struct CanonicalHash {
  std::string form;  // CanonicalForm::name()
  std::string hash;  // "sha256:<hex>" of the canonical bytes
  // "<form> <hash>", the string a step key takes for an input.
  std::string tagged() const { return form + " " + hash; }
  bool operator==(const CanonicalHash&) const = default;
};

Result<CanonicalHash> canonical_hash(const CanonicalForm& form, std::string_view bytes,
                                     const CommandHook& hook = nullptr);

}  // namespace berth::pipeline
