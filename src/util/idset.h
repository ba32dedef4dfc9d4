// idset: sets of small non-negative integers written as ranges — the one codec for
// every id list berth reads or writes: Flux's broker ranks and core ids (Flux RFC 22),
// the kernel's CPU lists (sysfs `online`, `thread_siblings_list`), and the CPU and core
// sets given on the command line (`--affinity`, `--cores`, `--cpu-set`).
//
//   "0-3,7"    -> {0, 1, 2, 3, 7}
//   "[0-3,7]"  -> the same (RFC 22's enclosing brackets are optional)
//   ""         -> {} (the empty set; sysfs `offline` reads like this)
//
// Grammar: an optional pair of enclosing brackets around a comma-separated list of
// elements, each ID or ID-ID, IDs decimal digits only, elements in any order. Nothing
// else: no blanks (a caller reading a file strips its own line ending), no signs.
// Failures (kInvalidInput; the message is "position N: <what>", N 1-based, without the
// input's name, which callers add): an empty element ("1,,2"), a sign, blank or other
// non-digit, a reversed range ("3-1"), an id above `max_id`, an id given twice or
// ranges that overlap, an opening bracket without its closing one, and the kernel's
// input-only stride form ("0-31:2/4"), which no file berth reads is written in.
//
// The readers this replaced differed at the edges; each edge takes the stricter rule
// that every input still meets. Flux's decoder swaps a reversed range, skips empty
// elements and merges duplicates; neither Flux nor the kernel ever writes any of them,
// so here each is an error: a list that contains one was not written by either, and
// guessing what it meant could double-count a core.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::idset {

// The largest id parse() accepts by default: a set of ids 0..kMaxId has 2^31-1
// members, so a count always fits in an int32_t slot count.
inline constexpr int64_t kMaxId = INT32_MAX - 1;

// The largest CPU id accepted, and parse_ids()'s default. Linux's NR_CPUS tops out at
// 8192 today; the margin keeps a bogus "0-4000000000" from expanding into gigabytes.
inline constexpr int kMaxCpuId = 65535;

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

// parse(), expanded into ascending, distinct ids. `max_id` bounds the result's size
// too, so it is a CPU id's bound unless the caller has a smaller one.
Result<std::vector<int>> parse_ids(std::string_view text, int max_id = kMaxCpuId);

// Ids written as ranges of consecutive ids, in the order given: "0-3,8" for ascending
// distinct ids (then parse_ids(encode_ids(v)) == v); "" for none.
std::string encode_ids(const std::vector<int>& ids);

}  // namespace berth::idset
