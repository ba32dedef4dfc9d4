#include "util/memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace berth {
namespace {

// Populating pages changes no byte of them, written or not, whatever the range's
// alignment and size.
TEST(Memory, PopulatingKeepsWhatIsThere) {
  std::vector<uint8_t> buf(4 << 20);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);
  memory::populate_for_writing(buf.data() + 3, buf.size() - 5);
  memory::populate_for_writing(buf.data(), buf.size());
  memory::populate_for_writing(buf.data() + 100, 10);  // below the size worth asking
  memory::populate_for_writing(buf.data(), 0);
  for (size_t i = 0; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], static_cast<uint8_t>(i * 7 + 1)) << i;
  }
  std::vector<uint64_t> room;
  room.reserve(1 << 20);
  memory::populate_for_writing(room.data(), room.capacity() * sizeof(uint64_t));
  room.assign(1 << 20, 5);
  EXPECT_EQ(room.front(), 5u);
  EXPECT_EQ(room.back(), 5u);
}

TEST(Memory, ReservePopulatedKeepsTheStringAndMakesRoom) {
  std::string s = "already here";
  memory::reserve_populated(s, 3 << 20);
  EXPECT_EQ(s, "already here");
  EXPECT_GE(s.capacity(), size_t{3} << 20);
  const char* data = s.data();
  s.append((3 << 20) - 20, 'x');  // within the room: no new buffer
  EXPECT_EQ(s.data(), data);
  EXPECT_EQ(s.substr(0, 13), "already herex");
  memory::reserve_populated(s, 10);  // less than it has: nothing changes
  EXPECT_EQ(s.data(), data);
}

}  // namespace
}  // namespace berth
