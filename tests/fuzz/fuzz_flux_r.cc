// Fuzzes parse_flux_r (Flux R version 1 JSON).
//
// Properties checked, abort() on any violation (rm_fuzz_check.h): no crash and no
// escaping exception on any bytes; a failure is kInvalidInput, one line, starting with
// the origin; a success names each host once, validly, with 1..2^31-1 slots.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "alloc/source.h"
#include "rm_fuzz_check.h"

namespace alloc = berth::alloc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  alloc::fuzz::check(alloc::parse_flux_r(text, alloc::fuzz::kOrigin));
  return 0;
}
