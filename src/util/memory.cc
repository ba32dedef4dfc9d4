#include "util/memory.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>

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

bool reserve_heap(size_t bytes) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  // glibc's defaults for what is set here, and the largest mmap threshold it takes.
  constexpr int kDefaultTopPad = 128 << 10;
  constexpr int kMaxMmapThreshold = 32 << 20;
  // A block the heap must grow for: more than the top its default pad leaves, less
  // than the mmap threshold set below.
  constexpr size_t kBlock = 1 << 20;
  if (bytes < kBlock || bytes > INT_MAX / 2) return false;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (::mallopt(M_MMAP_THRESHOLD, kMaxMmapThreshold) == 0) return false;
  (void)::mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * bytes));
  (void)::mallopt(M_TOP_PAD, static_cast<int>(bytes));
  auto before = reinterpret_cast<uintptr_t>(::sbrk(0));
  void* block = std::malloc(kBlock);
  auto after = reinterpret_cast<uintptr_t>(::sbrk(0));
  (void)::mallopt(M_TOP_PAD, kDefaultTopPad);
  auto at = reinterpret_cast<uintptr_t>(block);
  // The block must lie in the break's heap, which this call grew by `bytes` (a
  // sanitizer's allocator has heaps of its own, and leaves the break alone).
  bool grown = block != nullptr && after > before && after - before >= bytes && at < after &&
               after - at <= bytes + 2 * kBlock + page;
  if (grown) {
    uintptr_t from = (at + page - 1) & ~(page - 1);
    grown = ::madvise(reinterpret_cast<void*>(from), after - from, MADV_HUGEPAGE) == 0;
  }
  std::free(block);  // back to the heap's top, which stays
  return grown;
#else
  (void)bytes;
  return false;
#endif
}

}  // namespace berth::memory
