// libcrypto (OpenSSL 3), loaded at the first digest instead of linked: loading it costs
// every process about 1 ms of start-up on the development VM (a hello world linked
// against it starts in 2.0 ms against 1.0), and `berth alloc`, a settled no-op run and
// most other commands hash nothing. The functions berth calls, declared as
// openssl/evp.h and openssl/hmac.h declare them (and base64, which the agent's wire
// carries output bytes in: spec 08 §3).
//
// util/sha256.h promises digests that cannot fail (OpenSSL fails one only when out of
// memory), so the only honest alternative to a digest is none at all: a process that
// reaches a digest without libcrypto stops, saying what is missing (util/say.h, fatal).
// A host that must not be stopped so — Python — asks load_libcrypto() first, and
// refuses to load berth with its error instead.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "util/result.h"

namespace berth {

struct LibCrypto {
  decltype(&::EVP_MD_fetch) EVP_MD_fetch = nullptr;
  decltype(&::EVP_sha256) EVP_sha256 = nullptr;
  decltype(&::EVP_md5) EVP_md5 = nullptr;
  decltype(&::EVP_MD_CTX_new) EVP_MD_CTX_new = nullptr;
  decltype(&::EVP_MD_CTX_free) EVP_MD_CTX_free = nullptr;
  decltype(&::EVP_DigestInit_ex) EVP_DigestInit_ex = nullptr;
  decltype(&::EVP_DigestUpdate) EVP_DigestUpdate = nullptr;
  decltype(&::EVP_DigestFinal_ex) EVP_DigestFinal_ex = nullptr;
  decltype(&::EVP_Digest) EVP_Digest = nullptr;
  decltype(&::HMAC) HMAC = nullptr;
  decltype(&::EVP_EncodeBlock) EVP_EncodeBlock = nullptr;
  decltype(&::EVP_DecodeBlock) EVP_DecodeBlock = nullptr;
};

// Loads the library (once per process; thread-safe); fails naming what is missing.
Result<void> load_libcrypto();

// The loaded library; stops the process when it cannot be loaded (above).
const LibCrypto& libcrypto();

}  // namespace berth
