// The machine description files compiled into the binary (generated at build time
// by embed_machines.cmake from data/machines/*.toml). Internal to topo.
#pragma once

#include <cstddef>

namespace berth::topo::builtin {

struct File {
  const char* path;  // relative to the source tree: "data/machines/aurora.toml"
  const unsigned char* data;
  size_t size;
};

extern const File kFiles[];
extern const size_t kFileCount;

}  // namespace berth::topo::builtin
