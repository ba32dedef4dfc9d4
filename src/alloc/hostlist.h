// Hostlist: the compact node-list notation of Slurm and friends.
//
//   nid[0001-0004,0007]      -> nid0001 nid0002 nid0003 nid0004 nid0007
//   rack[1-2]-node[01-02]    -> rack1-node01 rack1-node02 rack2-node01 rack2-node02
//   a,b[3-4]x,c              -> a b3x b4x c
//
// Grammar (spec 01 §2): a list is comma-separated items (commas inside brackets
// belong to the bracket); an item is literal text with any number of bracket groups;
// a bracket group is a comma-separated list of N or N-M ranges. Zero padding: a
// range's width is the width of its first bound when that bound has a leading zero
// (or both bounds have the same width), as Slurm does. Expansion order is
// left-to-right with the leftmost bracket varying slowest, as Slurm does.
//
// Failure cases (all kInvalidInput, message names the 1-based position): empty
// input, empty item, unbalanced or nested brackets, empty group, non-digit in a
// range, reversed range (N-M with M < N), a range whose expansion would exceed
// `max_names`, numbers wider than 18 digits.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::alloc::hostlist {

// Default bound on the number of names one expression may expand to.
inline constexpr size_t kDefaultMaxNames = 10'000'000;

// Expands `expr` into host names, in order, duplicates kept.
Result<std::vector<std::string>> expand(std::string_view expr,
                                        size_t max_names = kDefaultMaxNames);

// An expression parsed once, its names produced one at a time: for a caller that takes
// them one by one and would otherwise hold them all at once (a Slurm job's 10^5 node
// names, on their way into the node table).
class Names {
 public:
  // How many names it expands to.
  size_t size() const;
  // Calls `fn` with each name, in expand()'s order; the view lasts until the next call.
  void for_each(const std::function<void(std::string_view)>& fn) const;

 private:
  friend Result<Names> parse(std::string_view expr, size_t max_names);
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
};

// Parses `expr` without expanding it: fails exactly when expand(expr, max_names) fails,
// with the same error.
Result<Names> parse(std::string_view expr, size_t max_names = kDefaultMaxNames);

// The number of names `expr` expands to, without producing them: fails exactly when
// expand(expr, max_names) fails, with the same error. For a caller that only asks
// whether an expression fits a bound, at the cost of parsing it.
Result<size_t> count(std::string_view expr, size_t max_names = kDefaultMaxNames);

// Compresses names into one expression, keeping their order and duplicates:
// consecutive names that differ only in one trailing number of the same width are
// merged into a range. compress(expand(x)) expands to the same names as x.
std::string compress(const std::vector<std::string>& names);

}  // namespace berth::alloc::hostlist
