// Fuzzes hostlist::expand, hostlist::count, hostlist::parse and the compress round trip
// (spec 01 §2).
//
// Properties checked, abort() on any violation:
//   - expand never crashes, and a failure is kInvalidInput with a "position N: " message;
//   - count(x) agrees with expand(x): the same number of names, or the same error;
//   - count(x) at the default bound agrees with expand(x) at the small bound used here;
//   - parse(x) fails as expand(x) does, or hands over its names one at a time;
//   - compress(expand(x)) expands back to exactly the same names, in order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "alloc/hostlist.h"

namespace hostlist = berth::alloc::hostlist;

namespace {

// The names an input may expand to here. An input costs about 2 us per byte of the
// names it makes (ASan, coverage, -O0), and those bytes are handled four times: made,
// compressed, parsed again, made again. At the earlier bound of 10^5 names one input
// took half a second and a minute's corpus held dozens such, which kept the fuzzer
// near 500 runs a second. Now a name's bytes are bounded by kNameBytes in all and
// their count by kMaxNames; past 128 names nothing new is seen anyway (libFuzzer counts
// a loop's trips in buckets up to 128). Every bound check is reached at any bound;
// the default bound's arithmetic is fuzzed through count(), which makes no names, and
// hostlist_test expands and compresses 10^5 names.
constexpr size_t kMaxNames = 256;
constexpr size_t kNameBytes = 4096;

void check_error(const berth::Error& e) {
  if (e.code() != berth::Errc::kInvalidInput) abort();
  if (e.message().rfind("position ", 0) != 0) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view expr(reinterpret_cast<const char*>(data), size);
  // A name is never longer than the expression.
  size_t max_names = std::clamp<size_t>(kNameBytes / (size + 1), 1, kMaxNames);
  auto names = hostlist::expand(expr, max_names);
  auto n = hostlist::count(expr, max_names);
  auto total = hostlist::count(expr);
  auto parsed = hostlist::parse(expr, max_names);
  if (n.ok() != names.ok() || parsed.ok() != names.ok()) abort();
  if (!total.ok()) check_error(total.error());
  if (!names.ok()) {
    check_error(names.error());
    if (n.error().message() != names.error().message()) abort();
    if (parsed.error().message() != names.error().message()) abort();
    // Failing at the small bound: a syntax error, or more names than it allows.
    if (total.ok() && *total <= max_names) abort();
    return 0;
  }
  if (*n != names->size()) abort();
  if (!total.ok() || *total != names->size()) abort();
  if (names->empty() || names->size() > max_names) abort();
  // One at a time, the same names in the same order.
  if (parsed->size() != names->size()) abort();
  size_t at = 0;
  parsed->for_each([&](std::string_view name) {
    if (at >= names->size() || (*names)[at] != name) abort();
    ++at;
  });
  if (at != names->size()) abort();
  std::string compressed = hostlist::compress(*names);
  auto again = hostlist::expand(compressed, max_names);
  if (!again.ok() || *again != *names) abort();
  return 0;
}
