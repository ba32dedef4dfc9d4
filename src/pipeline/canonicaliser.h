// Running a user's canonicaliser command (canonical = { out = "command:…" }; spec 04 §5).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::pipeline {

// The most bytes a canonicaliser may print: its output is hashed in memory.
inline constexpr size_t kMaxCanonicalBytes = size_t{1} << 32;

// Runs `argv` (found on PATH, no shell) with `bytes` on its stdin, in `cwd` when not
// empty, and returns what it printed on stdout. Fails with kNotFound / kRefused naming
// the command when it cannot start, kRefused with its exit status (or signal) and the
// tail of its stderr when it exits non-zero, kRefused when it prints more than
// kMaxCanonicalBytes. Never leaves a child behind.
Result<std::string> run_canonicaliser(const std::vector<std::string>& argv, std::string_view bytes,
                                      const std::string& cwd = {});

}  // namespace berth::pipeline
