// Fuzzes the machine description parser (topo::parse_machine): any bytes must give a
// description or an Error naming the file — never a crash, a hang or an exception
// escaping toml++.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "topo/machine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // "fuzz" is the stem, so an input naming itself "fuzz" gets past the name check.
  auto r = berth::topo::parse_machine(text, "fuzz.toml");
  if (!r.ok() && r.error().message().rfind("fuzz.toml", 0) != 0) __builtin_trap();
  return 0;
}
