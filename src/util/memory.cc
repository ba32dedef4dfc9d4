#include "util/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace berth::memory {

void populate_for_writing(void* begin, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr size_t kWorthIt = 256 << 10;
  if (bytes < kWorthIt) return;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto from = reinterpret_cast<uintptr_t>(begin);
  uintptr_t to = from + bytes;
  from = (from + page - 1) & ~(page - 1);
  to &= ~(page - 1);
  // A failure (EINVAL on an older kernel, ENOMEM) changes nothing: the writes fault
  // the pages in instead.
  if (to > from) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
#else
  (void)begin;
  (void)bytes;
#endif
}

void reserve_populated(std::string& s, size_t n) {
  s.reserve(n);
  populate_for_writing(s.data() + s.size(), s.capacity() - s.size());
}

}  // namespace berth::memory
