#include "util/sha256.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace berth {
namespace {

// FIPS 180-2 / NIST CAVS vectors.
struct Vector {
  std::string input;
  const char* hex;
};

std::vector<Vector> vectors() {
  return {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'),
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
}

TEST(Sha256, OneShotMatchesKnownVectors) {
  for (const auto& v : vectors()) EXPECT_EQ(sha256_hex(v.input), v.hex) << v.input.size();
}

TEST(Sha256, StreamingInUnevenPiecesMatchesOneShot) {
  for (const auto& v : vectors()) {
    Sha256 h;
    size_t off = 0;
    for (size_t step = 1; off < v.input.size(); step = step * 3 + 1) {
      size_t n = std::min(step, v.input.size() - off);
      h.update(v.input.data() + off, n);
      off += n;
    }
    EXPECT_EQ(h.finish_hex(), v.hex) << v.input.size();
  }
}

TEST(Sha256, FinishResetsForTheNextInput) {
  Sha256 h;
  h.update("abc");
  EXPECT_EQ(h.finish_hex(), vectors()[1].hex);
  EXPECT_EQ(h.finish_hex(), vectors()[0].hex);
  Sha256 moved = std::move(h);
  moved.update("abc");
  EXPECT_EQ(moved.finish_hex(), vectors()[1].hex);
}

TEST(Sha256, HexEncodesAndRecognisesDigests) {
  const unsigned char bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  EXPECT_EQ(to_hex(bytes, sizeof bytes), "000fa0ff");
  EXPECT_TRUE(is_sha256_hex(vectors()[0].hex));
  EXPECT_FALSE(is_sha256_hex("abc"));
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'A')));  // upper case is not a name
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'g')));
  // Every byte value, at the first, a middle and the last place: only 0-9 and a-f.
  for (size_t at : {size_t{0}, size_t{31}, size_t{63}}) {
    for (int b = 0; b < 256; ++b) {
      std::string s(64, '7');
      s[at] = static_cast<char>(b);
      bool hex = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f');
      EXPECT_EQ(is_sha256_hex(s), hex) << "byte " << b << " at " << at;
    }
  }
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(65, 'a')));
}

}  // namespace
}  // namespace berth

namespace berth {
namespace {

// A file is hashed as its bytes are, across the read buffer's edge (1 MiB), and a file
// that cannot be opened is named.
TEST(Sha256File, HashesTheBytesAndNamesAMissingFile) {
  char path[] = "/tmp/berth-sha256-file.XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string bytes((1 << 20) + 3, 'x');
  bytes[17] = '\0';
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  auto h = sha256_file(path);
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(*h, "sha256:" + sha256_hex(bytes));
  ::unlink(path);
  auto gone = sha256_file(path);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), Errc::kNotFound);
  EXPECT_NE(gone.error().message().find(path), std::string::npos);
}

TEST(FromHex, ReadsWhatToHexWritesAndRefusesAnythingElse) {
  const std::string bytes("\x00\x01\xab\xff", 4);
  char back[4];
  ASSERT_TRUE(from_hex(to_hex(bytes.data(), bytes.size()), back, 4));
  EXPECT_EQ(std::string(back, 4), bytes);
  EXPECT_FALSE(from_hex("0001abf", back, 4));   // too short
  EXPECT_FALSE(from_hex("0001ABff", back, 4));  // upper case is not what keys are
  EXPECT_FALSE(from_hex("0001agff", back, 4));  // not a digit
}

}  // namespace
}  // namespace berth
