// Memory about to be written whole, and the heap a run builds its objects in.
#pragma once

#include <cstddef>
#include <string>

namespace berth::memory {

// Asks the kernel for the pages of [begin, begin + bytes) at once, before they are
// written: one call instead of a page fault per 4 KiB, about half the cost on the
// development VM (a 10^5-node allocation's table is 15 MB, 3,700 faults). Only the
// whole pages inside the range are asked for, and only from 256 KiB up. On a kernel
// without MADV_POPULATE_WRITE (before Linux 5.14) nothing happens: the pages then
// fault in as they are written, as they would have.
void populate_for_writing(void* begin, size_t bytes);

// Room for `n` characters in `s` (std::string::reserve), the room past its contents
// asked for at once: for a string of megabytes about to be written whole.
void reserve_populated(std::string& s, size_t n);

// Grows the process's heap by `bytes` at once and asks the kernel to back it with
// transparent huge pages (MADV_HUGEPAGE, which the kernel honours in its "madvise" and
// "always" modes): a process that then builds tens of megabytes of small objects (an
// edit's rerun of 10^4 steps: the record, the graph, the report) faults them in 2 MiB
// at a time rather than 4 KiB (12,000 faults became 2,300, 100 ms became 88, on the
// development VM). Nothing is allocated until it is written. It sets the process's
// malloc thresholds to keep that room: blocks up to 32 MiB (the most glibc allows)
// come from the heap, not each from a mapping of its own; the heap is not trimmed below
// 2 x `bytes`. So it is a program's to call, once, before its work, never a library's.
// Returns whether the heap grew and was advised: false for under 1 MiB, where malloc is
// not glibc's (a sanitizer's allocator, which changes nothing) or the heap cannot grow.
bool reserve_heap(size_t bytes);

}  // namespace berth::memory
