// Fuzzes hostlist::expand and the compress round trip (spec 01 §2).
//
// Properties checked, abort() on any violation:
//   - expand never crashes, and a failure is kInvalidInput with a "position N: " message;
//   - compress(expand(x)) expands back to exactly the same names, in order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "alloc/hostlist.h"

namespace hostlist = berth::alloc::hostlist;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view expr(reinterpret_cast<const char*>(data), size);
  // A name is never longer than the expression, so this caps the names' bytes at
  // 64 MiB per expansion: enough to reach every code path, small enough to stay fast
  // under ASan and inside -rss_limit_mb.
  size_t max_names = std::min<size_t>(100000, (size_t{64} << 20) / (size + 1));
  auto names = hostlist::expand(expr, max_names);
  if (!names.ok()) {
    const auto& e = names.error();
    if (e.code() != berth::Errc::kInvalidInput) abort();
    if (e.message().rfind("position ", 0) != 0) abort();
    return 0;
  }
  if (names->empty() || names->size() > max_names) abort();
  std::string compressed = hostlist::compress(*names);
  auto again = hostlist::expand(compressed, max_names);
  if (!again.ok() || *again != *names) abort();
  return 0;
}
