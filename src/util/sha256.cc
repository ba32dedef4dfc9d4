#include "util/sha256.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "util/libcrypto.h"

namespace berth {
namespace {

// Fetched once: OpenSSL 3 otherwise looks the algorithm up in its provider tables on
// every EVP_DigestInit_ex (a lock and a hash lookup), which dominates hashing of the
// many small rows and keys berth hashes.
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = libcrypto().EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : libcrypto().EVP_sha256();
  }();
  return md;
}

EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

// Allocation failure is the only way these calls fail (see the header).
void check(int openssl_ok) {
  if (openssl_ok != 1) throw std::bad_alloc();
}

}  // namespace

Sha256::Sha256() : ctx_(libcrypto().EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) throw std::bad_alloc();
  check(libcrypto().EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr));
}

Sha256::~Sha256() { libcrypto().EVP_MD_CTX_free(as_ctx(ctx_)); }

Sha256::Sha256(Sha256&& other) noexcept : ctx_(other.ctx_) { other.ctx_ = nullptr; }

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    libcrypto().EVP_MD_CTX_free(as_ctx(ctx_));
    ctx_ = other.ctx_;
    other.ctx_ = nullptr;
  }
  return *this;
}

void Sha256::update(const void* data, size_t size) {
  if (size == 0) return;
  check(libcrypto().EVP_DigestUpdate(as_ctx(ctx_), data, size));
}

Sha256::Digest Sha256::finish() {
  Digest d{};
  unsigned int len = 0;
  check(libcrypto().EVP_DigestFinal_ex(as_ctx(ctx_), d.data(), &len));
  if (len != d.size()) throw std::bad_alloc();
  check(libcrypto().EVP_DigestInit_ex(as_ctx(ctx_), sha256_md(), nullptr));
  return d;
}

std::string Sha256::finish_hex() {
  Digest d = finish();
  return to_hex(d.data(), d.size());
}

std::string sha256_hex(std::string_view data) {
  // One context per thread, reused: EVP_Digest makes and frees one per call, which for
  // the two keys of each of 10^6 steps is most of hashing their few hundred bytes.
  thread_local Sha256 h;
  h.update(data.data(), data.size());
  return h.finish_hex();
}

Result<std::string> sha256_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno == ENOENT ? Errc::kNotFound : Errc::kIo,
                fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  Sha256 h;
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(Errc::kIo, fmt::format("{}: cannot read: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return "sha256:" + h.finish_hex();
}

std::string to_hex(const void* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string out(size * 2, '\0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0xf];
  }
  return out;
}

bool from_hex(std::string_view hex, char* out, size_t n) {
  // A table, not branches: the digits of a hash are as random as can be.
  static constexpr std::array<int8_t, 256> kDigit = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int c = '0'; c <= '9'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - '0');
    for (int c = 'a'; c <= 'f'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - 'a' + 10);
    return t;
  }();
  if (hex.size() != 2 * n) return false;
  int bad = 0;
  for (size_t k = 0; k < n; ++k) {
    int hi = kDigit[static_cast<unsigned char>(hex[2 * k])];
    int lo = kDigit[static_cast<unsigned char>(hex[2 * k + 1])];
    bad |= hi | lo;  // negative when either is not a digit
    out[k] = static_cast<char>(hi * 16 + lo);
  }
  return bad >= 0;
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  // No early exit and no branch: the compiler makes the loop a few vector operations.
  // It runs for every digest a settled record or a store check reads (10^4 and more).
  unsigned bad = 0;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    bad |= static_cast<unsigned>(static_cast<unsigned char>(u - '0') > 9) &
           static_cast<unsigned>(static_cast<unsigned char>(u - 'a') > 5);
  }
  return bad == 0;
}

}  // namespace berth
