// Fuzzes launch::parse_proc_stat (src/launch/gpu_watch.h): /proc/<pid>/stat, whose
// second field is a process's own name, which it chooses (prctl, argv[0]) — parentheses,
// spaces and newlines included.
//
// Properties checked, abort() on any violation:
//   - parsing never crashes, throws or runs away, whatever the bytes;
//   - a failure is kInvalidInput;
//   - the name taken holds no control character (it goes into reports);
//   - a process group is never negative.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "launch/gpu_watch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto stat = berth::launch::parse_proc_stat(text);
  if (!stat.ok()) {
    if (stat.error().code() != berth::Errc::kInvalidInput) abort();
    return 0;
  }
  for (char c : stat->comm) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) abort();
  }
  if (stat->pgrp < 0) abort();
  return 0;
}
