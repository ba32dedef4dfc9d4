// Fuzzes parse_pe_hostfile (Grid Engine's PE_HOSTFILE).
//
// Properties checked, abort() on any violation (rm_fuzz_check.h): no crash on any
// bytes; a failure is kInvalidInput, one line, starting with the origin; a success
// names each host once, validly, with 1..2^31-1 slots given by the scheduler.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "alloc/source.h"
#include "rm_fuzz_check.h"

namespace alloc = berth::alloc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  alloc::fuzz::check(alloc::parse_pe_hostfile(text, alloc::fuzz::kOrigin));
  return 0;
}
