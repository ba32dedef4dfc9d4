// Fuzzes parse_tasks_per_node (spec 01 §2.2).
//
// Properties checked, abort() on any violation:
//   - the parser never crashes, and a failure is kInvalidInput with a "position N: "
//     message;
//   - a success has between 1 and max_items counts, each in [0, 2^31-1], and writing it
//     back run-length encoded ("c(xN),...") parses to the same counts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "alloc/tasks_per_node.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxItems = 100000;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto counts = berth::alloc::parse_tasks_per_node(text, kMaxItems);
  if (!counts.ok()) {
    const auto& e = counts.error();
    if (e.code() != berth::Errc::kInvalidInput) abort();
    if (e.message().rfind("position ", 0) != 0) abort();
    return 0;
  }
  if (counts->empty() || counts->size() > kMaxItems) abort();
  std::string rendered;
  for (size_t i = 0; i < counts->size();) {
    int64_t c = (*counts)[i];
    if (c < 0 || c > 2147483647) abort();
    size_t j = i;
    while (j < counts->size() && (*counts)[j] == c) ++j;
    if (!rendered.empty()) rendered += ',';
    rendered += std::to_string(c);
    if (j - i > 1) rendered += "(x" + std::to_string(j - i) + ")";
    i = j;
  }
  auto again = berth::alloc::parse_tasks_per_node(rendered, kMaxItems);
  if (!again.ok() || *again != *counts) abort();
  return 0;
}
