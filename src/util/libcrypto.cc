#include "util/libcrypto.h"

#include <openssl/opensslv.h>

#include <cstdlib>
#include <string>

#include "util/say.h"
#include "util/shared_library.h"

namespace berth {
namespace {

static_assert(OPENSSL_VERSION_MAJOR == 3, "libcrypto's soname below is OpenSSL 3's");
constexpr const char* kLibcrypto = "libcrypto.so.3";

// The library's functions, or what is missing.
struct Loaded {
  LibCrypto api;
  std::string missing;
};

const Loaded& loaded() {
  static const Loaded once = [] {
    Loaded l;
    SharedLibrary lib(kLibcrypto, "libssl3");
    LibCrypto& c = l.api;
    lib.bind(c.EVP_MD_fetch, "EVP_MD_fetch");
    lib.bind(c.EVP_sha256, "EVP_sha256");
    lib.bind(c.EVP_md5, "EVP_md5");
    lib.bind(c.EVP_MD_CTX_new, "EVP_MD_CTX_new");
    lib.bind(c.EVP_MD_CTX_free, "EVP_MD_CTX_free");
    lib.bind(c.EVP_DigestInit_ex, "EVP_DigestInit_ex");
    lib.bind(c.EVP_DigestUpdate, "EVP_DigestUpdate");
    lib.bind(c.EVP_DigestFinal_ex, "EVP_DigestFinal_ex");
    lib.bind(c.EVP_Digest, "EVP_Digest");
    lib.bind(c.HMAC, "HMAC");
    lib.bind(c.EVP_EncodeBlock, "EVP_EncodeBlock");
    lib.bind(c.EVP_DecodeBlock, "EVP_DecodeBlock");
    l.missing = lib.error();
    return l;
  }();
  return once;
}

}  // namespace

Result<void> load_libcrypto() {
  if (!loaded().missing.empty()) return fail(Errc::kNotFound, loaded().missing);
  return Ok{};
}

const LibCrypto& libcrypto() {
  const Loaded& l = loaded();
  if (!l.missing.empty()) {
    say(SayLevel::kFatal, l.missing);
    std::abort();
  }
  return l.api;
}

}  // namespace berth
