// Fuzzes parse_dash_host: any bytes must give tokens that keep the parser's promises or
// an error naming the origin and a position; never a crash, a hang or a leak.
#include <cstdint>
#include <string_view>

#include "alloc/source.h"

namespace berth::alloc::internal {
// dash_host.cc: parse_dash_host with its bound as a parameter. At 10^6 names one input
// takes seconds in a Debug build; a small bound keeps runs fast and still reaches every
// bound check. A name costs about 15 us here (ASan, coverage, -O0: expanded, checked,
// hashed), so at 1,000 the worst input takes about 15 ms; at the earlier 10,000 such
// inputs filled the corpus and held the fuzzer near 2,000 runs a second.
Result<std::vector<HostToken>> parse_dash_host(std::string_view text, std::string_view origin,
                                               size_t max_names);
}  // namespace berth::alloc::internal

constexpr size_t kMaxNames = 1000;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using berth::alloc::HostToken;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = berth::alloc::internal::parse_dash_host(text, "--host", kMaxNames);
  if (!r.ok()) {
    if (r.error().message().rfind("--host: position ", 0) != 0) __builtin_trap();
    return 0;
  }
  if (r->empty()) __builtin_trap();  // an empty list is an error, never "no hosts"
  for (const HostToken& t : *r) {
    switch (t.kind) {
      case HostToken::kName:
        if (t.name.empty() || t.name.size() > 255) __builtin_trap();
        if (t.name.find_first_of(" \t\r\n@,[]+*") != std::string::npos) __builtin_trap();
        if (!t.slots_star && (t.slots < 1 || t.slots > INT32_MAX)) __builtin_trap();
        break;
      case HostToken::kRelativeIndex:
        if (t.index < 0 || t.index > INT32_MAX) __builtin_trap();
        break;
      case HostToken::kEmpty:
        if (t.count != -1 && (t.count < 1 || t.count > INT32_MAX)) __builtin_trap();
        break;
    }
  }
  return 0;
}
