// Fuzzes parse_hostfile: any bytes must give nodes that keep the parser's promises or an
// error naming the origin and a line; never a crash, a hang or a leak.
#include <cstdint>
#include <string_view>

#include "alloc/source.h"

namespace berth::alloc::internal {
// hostfile.cc: parse_hostfile with its bound as a parameter. At 10^6 names one input
// takes seconds in a Debug build; a small bound keeps runs fast and still reaches every
// bound check. A name costs about 15 us here (ASan, coverage, -O0: expanded, checked,
// hashed), so at 1,000 the worst input takes about 15 ms; at the earlier 10,000 such
// inputs filled the corpus and held the fuzzer near 2,000 runs a second.
Result<Hostfile> parse_hostfile(std::string_view text, std::string_view origin, size_t max_names);
}  // namespace berth::alloc::internal

constexpr size_t kMaxNames = 1000;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = berth::alloc::internal::parse_hostfile(text, "fuzz", kMaxNames);
  if (!r.ok()) {
    if (r.error().message().rfind("fuzz:", 0) != 0) __builtin_trap();
    return 0;
  }
  for (const berth::alloc::NodeSpec& n : r->nodes) {
    if (n.name.empty() || n.name.size() > 255) __builtin_trap();
    if (n.slots < 1 || n.slots > INT32_MAX) __builtin_trap();
    if (n.slots_max != 0 && n.slots_max < n.slots) __builtin_trap();
    if (n.name.find_first_of(" \t\r\n@^#=,[]") != std::string::npos) __builtin_trap();
  }
  for (const std::string& e : r->excluded) {
    if (e.empty() || e.find_first_of(" \t\r\n@^#=,[]") != std::string::npos) __builtin_trap();
  }
  return 0;
}
