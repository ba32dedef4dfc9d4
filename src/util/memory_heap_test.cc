// reserve_heap() changes how glibc's malloc behaves, so its test is a program of its
// own, built without sanitizers (whose allocators are not glibc's): the heap grows by
// what was asked, the kernel is asked for huge pages across it (its mapping's flags
// in /proc/self/smaps say "hg"), and blocks allocated afterwards come from it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "util/memory.h"

namespace berth {
namespace {

struct Mapping {
  uintptr_t begin = 0, end = 0;
  std::string flags;  // VmFlags
};

// The mapping holding `addr`, from /proc/self/smaps.
Mapping mapping_of(uintptr_t addr) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Mapping m, found;
  bool in = false;
  while (std::getline(smaps, line)) {
    uintptr_t b = 0, e = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> b >> dash >> e && dash == '-' && line.find(':') > line.find(' ')) {
      m = Mapping{b, e, ""};
      in = b <= addr && addr < e;
      continue;
    }
    if (in && line.rfind("VmFlags:", 0) == 0) {
      found = m;
      found.flags = line.substr(8);
    }
  }
  return found;
}

bool advised(const Mapping& m) { return (" " + m.flags + " ").find(" hg ") != std::string::npos; }

TEST(ReserveHeap, GrowsTheHeapInHugePagesAndAllocatesFromIt) {
  constexpr size_t kBytes = 64 << 20;
  auto before = reinterpret_cast<uintptr_t>(::sbrk(0));
  ASSERT_TRUE(memory::reserve_heap(kBytes));
  auto after = reinterpret_cast<uintptr_t>(::sbrk(0));
  EXPECT_GE(after - before, kBytes);
  Mapping top = mapping_of(after - 1);
  ASSERT_NE(top.end, 0u) << "no mapping holds the break";
  EXPECT_TRUE(advised(top)) << "flags: " << top.flags;
  EXPECT_GE(top.end - top.begin, kBytes - (2 << 20));
  // A block of 8 MiB, which would have had a mapping of its own, comes from the advised
  // room; it and a run of small blocks leave the break where it is.
  void* big = std::malloc(8 << 20);
  ASSERT_NE(big, nullptr);
  static_cast<char*>(big)[(8 << 20) - 1] = 1;
  auto at = reinterpret_cast<uintptr_t>(big);
  EXPECT_TRUE(top.begin <= at && at + (8 << 20) <= top.end) << "8 MiB at " << std::hex << at;
  std::vector<std::string> small(100000, std::string(40, 'x'));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(::sbrk(0)), after);
  std::free(big);
}

TEST(ReserveHeap, RefusesWhatIsNotWorthIt) {
  auto before = reinterpret_cast<uintptr_t>(::sbrk(0));
  EXPECT_FALSE(memory::reserve_heap(0));
  EXPECT_FALSE(memory::reserve_heap(4096));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(::sbrk(0)), before);
}

}  // namespace
}  // namespace berth
