// Fuzzes pipeline::decode_settled (src/pipeline/settled.h): a settled record is read
// back from the local index, which any process or a damaged disk may have written.
//
// Properties checked, abort() on any violation:
//   - decoding never crashes, throws or runs away, whatever the bytes;
//   - a failure is kInvalidInput and names a byte offset or the format;
//   - what decodes re-encodes to bytes that decode to the same record;
//   - what decodes decodes the same without its steps' entries and then with them;
//   - what decodes makes, from any object of the length it names (up to a megabyte),
//     steps of the length it names; its entries' places in the object are found or
//     not, without a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/settled.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto s = berth::pipeline::decode_settled(bytes);
  if (!s.ok()) {
    if (s.error().code() != berth::Errc::kInvalidInput) abort();
    const std::string& m = s.error().message();
    if (m.find("settled record: ") != 0) abort();
    return 0;
  }
  std::string again = berth::pipeline::encode_settled(*s);
  auto back = berth::pipeline::decode_settled(again);
  if (!back.ok() || !(*back == *s)) abort();
  // Read without its steps' entries, then those read from where they begin: the same.
  size_t at = 0;
  auto lazy = berth::pipeline::decode_settled(bytes, false, &at);
  if (!lazy.ok() || !lazy->entries.empty()) abort();
  if (!berth::pipeline::decode_settled_entries(bytes, at, *lazy).ok()) abort();
  if (!(*lazy == *s)) abort();
  if (s->object_bytes <= (1u << 20)) {
    auto steps = berth::pipeline::settled_steps_text(*s, std::string(s->object_bytes, 'x'));
    if (!steps.ok() || steps->size() != s->steps_bytes) abort();
    auto spans = berth::pipeline::settled_object_spans(*s);
    if (spans && spans->size() != s->entries.size()) abort();
  }
  return 0;
}
