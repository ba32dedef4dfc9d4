// Memory about to be written whole.
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

}  // namespace berth::memory
