// SHA-256, streaming and one-shot, through OpenSSL's EVP interface, and lower-case
// hex encoding.
//
// This is the hash that names every object in the store (spec 05 §1) and that
// canonical hashes are built on; OpenSSL is used so that berth hashes at the speed of
// `openssl dgst -sha256` (SHA-NI where the CPU has it).
//
// Failure: OpenSSL fails a SHA-256 digest only when it cannot allocate. berth reports
// that as C++ reports every allocation that fails, a std::string's in any library here
// included: std::bad_alloc (a Python host sees MemoryError). No function here returns
// an error.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace berth {

// A streaming SHA-256 context: update() any number of times, then finish() once.
// Move-only; not thread-safe (one context per thread).
class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }

  // The digest of everything given to update(). The context is then reset, so the
  // same object can hash another input.
  Digest finish();
  // finish() as 64 lower-case hex digits.
  std::string finish_hex();

 private:
  void* ctx_ = nullptr;  // EVP_MD_CTX*, kept opaque so this header needs no OpenSSL
};

// The SHA-256 of `data` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view data);

// The SHA-256 of the file at `path`, streamed (inputs may be large), as
// "sha256:<64 hex digits>". Fails (kNotFound, kIo) naming the path when it cannot be
// opened or read — the one error here, and it is the file's, not the digest's.
Result<std::string> sha256_file(const std::string& path);

// `size` bytes as 2*size lower-case hex digits.
std::string to_hex(const void* data, size_t size);

// The `n` bytes that `hex` (2 n lower-case hex digits) spells, into `out`; false when
// it is anything else.
bool from_hex(std::string_view hex, char* out, size_t n);

// True when `s` is exactly 64 lower-case hex digits (what sha256_hex returns).
bool is_sha256_hex(std::string_view s);

}  // namespace berth
