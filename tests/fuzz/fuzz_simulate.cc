// Fuzzes parse_simulate: any bytes must give well-formed simulated nodes or an error
// naming the origin and a position; never a crash, a hang or a leak.
#include <cstdint>
#include <string_view>

#include "alloc/source.h"

namespace berth::alloc::internal {
// simulator.cc: parse_simulate with its node bound as a parameter. A valid request may
// fabricate 10^7 nodes (about a gigabyte); the unit tests cover that bound, and a small
// one here keeps every run fast and under the fuzzer's memory limit.
Result<std::vector<NodeSpec>> parse_simulate(std::string_view text, std::string_view origin,
                                             uint64_t max_nodes);
}  // namespace berth::alloc::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = berth::alloc::internal::parse_simulate(text, "--simulate", 10'000);
  if (!r.ok()) {
    if (r.error().message().rfind("--simulate: position ", 0) != 0) __builtin_trap();
    return 0;
  }
  if (r->empty()) __builtin_trap();
  const size_t width = r->back().name.size();
  for (const berth::alloc::NodeSpec& n : *r) {
    if (n.name.rfind("sim", 0) != 0 || n.name.size() != width) __builtin_trap();
    if (n.slots < 1 || n.slots > INT32_MAX || !n.slots_given) __builtin_trap();
  }
  return 0;
}
