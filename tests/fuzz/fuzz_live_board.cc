// Fuzzes pipeline::parse_board (spec 04 §7.6): the live board is a file another
// process wrote — or half wrote, or a newer berth — and `berth status` and
// `berth log -f` read it.
//
// Properties checked, abort() on any violation:
//   - parsing never crashes, throws or runs away, whatever the bytes;
//   - a board it accepts, written back, parses to the same board.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/live_board.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace berth::pipeline;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto b = parse_board(text, "live.json");
  if (!b.ok()) return 0;
  auto again = parse_board(board_json(*b), "live.json");
  if (!again.ok() || !(*again == *b)) abort();
  return 0;
}
