// Fuzzes idset::parse (Flux RFC 22 idsets: "0-3,7").
//
// Properties checked, abort() on any violation: no crash on any bytes; a failure is
// kInvalidInput with a "position N: " message; a success is ascending, disjoint,
// non-adjacent ranges within the bound, and encode() parses back to the same set.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "alloc/idset.h"

namespace idset = berth::alloc::idset;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = idset::parse(text);
  if (!r.ok()) {
    if (r.error().code() != berth::Errc::kInvalidInput) abort();
    if (r.error().message().rfind("position ", 0) != 0) abort();
    return 0;
  }
  for (size_t i = 0; i < r->size(); ++i) {
    const idset::Range& g = (*r)[i];
    if (g.first < 0 || g.first > g.last || g.last > idset::kMaxId) abort();
    if (i > 0 && (*r)[i - 1].last + 1 >= g.first) abort();  // disjoint and merged
  }
  if (idset::count(*r) > idset::kMaxId + 1) abort();
  auto again = idset::parse(idset::encode(*r));
  if (!again.ok() || *again != *r) abort();
  return 0;
}
