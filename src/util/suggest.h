// Suggestions for a mistyped name: the known name closest to what was written, so that
// an error about an unknown step, target, key or flag can say "did you mean 'x'?".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::str {

// The edit distance between `a` and `b`: insertions, deletions, substitutions and
// swaps of two neighbouring characters, each costing 1 (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name`, when one is close enough to be a likely typo: at
// most a third of the longer name's length away (and at least 1, at most 3). Ties go to
// the earlier candidate. nullopt when none is close, or `name` is itself a candidate.
std::optional<std::string> closest(std::string_view name,
                                   const std::vector<std::string_view>& candidates);

// " (did you mean 'x'?)" for the closest candidate, or "" when none is close.
std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& candidates);

}  // namespace berth::str
