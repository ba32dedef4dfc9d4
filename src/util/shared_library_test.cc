#include "util/shared_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "util/libcrypto.h"
#include "util/sha256.h"

namespace berth {
namespace {

TEST(SharedLibrary, BindsAFunctionOfALoadedLibrary) {
  SharedLibrary libc("libc.so.6", "libc6");
  decltype(&::getpid) own_pid = nullptr;
  libc.bind(own_pid, "getpid");
  ASSERT_TRUE(libc.error().empty()) << libc.error();
  ASSERT_NE(own_pid, nullptr);
  EXPECT_EQ(own_pid(), ::getpid());
}

TEST(SharedLibrary, AMissingLibraryNamesItselfAndItsPackage) {
  SharedLibrary lib("libberth-nonexistent.so.7", "berth-nonexistent");
  decltype(&::getpid) fn = nullptr;
  lib.bind(fn, "getpid");
  EXPECT_EQ(fn, nullptr);
  EXPECT_NE(lib.error().find("cannot load libberth-nonexistent.so.7"), std::string::npos)
      << lib.error();
  EXPECT_NE(lib.error().find("apt-get install berth-nonexistent"), std::string::npos)
      << lib.error();
}

TEST(SharedLibrary, SaysWhetherALibraryIsLoadedWithoutLoadingIt) {
  EXPECT_TRUE(SharedLibrary::loaded("libc.so.6"));
  EXPECT_FALSE(SharedLibrary::loaded("libberth-nonexistent.so.7"));
  // That asking loads nothing is LibCryptoDeathTest's first question: libcrypto, which
  // nothing linked, is not loaded before the first digest.
}

TEST(SharedLibrary, AMissingFunctionMakesItUnusable) {
  SharedLibrary libc("libc.so.6", "libc6");
  decltype(&::getpid) fn = nullptr;
  libc.bind(fn, "berth_no_such_function");
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(libc.error(), "libc.so.6 has no berth_no_such_function");
  // The first missing function is the one named.
  libc.bind(fn, "another_missing_one");
  EXPECT_EQ(libc.error(), "libc.so.6 has no berth_no_such_function");
}

// Not loaded when the process starts (nothing links it), loaded by the first digest: in
// a process of its own (gtest's "threadsafe" death test runs this binary again).
TEST(LibCryptoDeathTest, NotLoadedUntilTheFirstDigest) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        bool before = SharedLibrary::loaded("libcrypto.so.3");
        std::string digest = sha256_hex("abc");
        bool after = SharedLibrary::loaded("libcrypto.so.3");
        std::exit(!before && after && is_sha256_hex(digest) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The digest is right, and the library is loaded once.
TEST(LibCrypto, LoadedAtTheFirstDigest) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const LibCrypto& c = libcrypto();
  EXPECT_NE(c.EVP_Digest, nullptr);
  EXPECT_NE(c.HMAC, nullptr);
  EXPECT_EQ(&c, &libcrypto());  // once per process
}

}  // namespace
}  // namespace berth
