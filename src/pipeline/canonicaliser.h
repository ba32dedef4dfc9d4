// Running a user's canonicaliser command (canonical = { out = "command:…" }; spec 04 §5).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::pipeline {

// The most bytes a canonicaliser may print: its output is hashed in memory.
inline constexpr size_t kMaxCanonicalBytes = size_t{1} << 32;

// Runs `argv` (found on env's PATH, no shell) through launch::capture with `bytes` on its
// stdin, `env` as its whole environment, in `cwd` when not empty, and returns what it
// printed on stdout. No time limit: it takes as long as its input needs, like the step
// that wrote the input. Fails with kNotFound / kRefused naming the command when it
// cannot start, kRefused with its exit status (or signal) and the tail of its stderr
// when it exits non-zero, kRefused when it prints more than kMaxCanonicalBytes. Never
// leaves a child behind.
Result<std::string> run_canonicaliser(const std::vector<std::string>& argv, std::string_view bytes,
                                      const Env& env, const std::string& cwd = {});

}  // namespace berth::pipeline
