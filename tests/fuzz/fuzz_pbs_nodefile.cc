// Fuzzes parse_pbs_nodefile.
//
// Properties checked, abort() on any violation (rm_fuzz_check.h): no crash on any
// bytes; a failure is kInvalidInput, one line, starting with the origin; a success
// names each host once, validly, with 1..2^31-1 slots given by the scheduler — and
// here, since every non-blank line is one slot, the slots add up to the line count.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "alloc/source.h"
#include "rm_fuzz_check.h"
#include "util/strings.h"

namespace alloc = berth::alloc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = alloc::parse_pbs_nodefile(text, alloc::fuzz::kOrigin);
  alloc::fuzz::check(r);
  if (r.ok()) {
    int64_t lines = 0;
    for (std::string_view line : berth::str::split(text, '\n')) {
      if (!berth::str::split_ws(line).empty()) ++lines;
    }
    int64_t slots = 0;
    for (const auto& n : *r) slots += n.slots;
    if (slots != lines) alloc::fuzz::contract_broken("one slot per line", "");
  }
  return 0;
}
