// Fuzzes pipeline::decode_lease (spec 06 §1): a lease row may hold any bytes — another
// build's format, a torn write, a hostile writer — and every worker reads it.
//
// Properties checked, abort() on any violation:
//   - decoding never crashes, throws or runs away, whatever the bytes;
//   - a decoded record has a non-empty token (a token is the holder's identity);
//   - a decoded record encodes to text that decodes to the same record, and encoding
//     that again gives the same text (encode_lease is canonical: equal records are
//     equal bytes, which acquire's read-back relies on).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/lease.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = berth::pipeline::decode_lease(text);
  if (!r) return 0;
  if (r->token.empty()) abort();
  std::string once = berth::pipeline::encode_lease(*r);
  auto again = berth::pipeline::decode_lease(once);
  if (!again || !(*again == *r)) abort();
  if (berth::pipeline::encode_lease(*again) != once) abort();
  return 0;
}
