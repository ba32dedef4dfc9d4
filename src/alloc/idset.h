// idset: sets of small non-negative integers written as ranges, Flux's notation for
// broker ranks and core ids (Flux RFC 22).
//
//   "0-3,7"    -> {0, 1, 2, 3, 7}
//   "[0-3,7]"  -> the same (the brackets are optional)
//   ""         -> {} (the empty set)
//
// Grammar: an optional pair of enclosing brackets around a comma-separated list of
// elements, each ID or ID-ID, IDs decimal digits only. Elements may come in any
// order. Failure cases (kInvalidInput; the message names the 1-based position and
// not the input, which callers add): an empty element ("1,,2"), a sign, blank or
// other non-digit, a reversed range ("3-1"), an id above `max_id`, an id given twice
// or ranges that overlap, an opening bracket without its closing one.
//
// Flux's own decoder is more forgiving — it swaps a reversed range, skips empty
// elements, merges duplicates and lets strtoul() accept blanks and signs. Flux itself
// never writes any of those, so here each is an error: a document that contains one
// was not written by Flux, and guessing what it meant could double-count a core.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::alloc::idset {

// The largest id accepted by default: a set of ids 0..kMaxId has 2^31-1 members, so a
// count always fits in an int32_t slot count.
inline constexpr int64_t kMaxId = INT32_MAX - 1;

// An inclusive range first..last, first <= last.
struct Range {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const Range&) const = default;
};

// Parses `text` into ascending ranges, with adjacent ranges merged ("0-1,2" -> 0-2),
// so that equal sets always parse to equal vectors.
Result<std::vector<Range>> parse(std::string_view text, int64_t max_id = kMaxId);

// Number of ids in the set.
int64_t count(const std::vector<Range>& ranges);

// The set written back in canonical form: ascending, no brackets, "a-b" for runs of
// two or more ("0-3,7"); "" for the empty set. parse(encode(s)) == s.
std::string encode(const std::vector<Range>& ranges);

}  // namespace berth::alloc::idset
