#include "store/object_store.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::store {
namespace {

TEST(ObjectName, IsSha256OfTheBytes) {
  EXPECT_EQ(object_name_of("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(check_object_name(object_name_of("")).ok());
}

TEST(ObjectName, RejectsMalformedNames) {
  const std::string hex(64, 'a');
  for (std::string bad :
       {std::string(""), hex, "sha1:" + hex, "sha256:" + hex.substr(1), "sha256:" + hex + "a",
        "SHA256:" + hex, "sha256:" + std::string(64, 'A'), "sha256:../../" + hex.substr(6)}) {
    auto r = check_object_name(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_NE(r.error().message().find("object name"), std::string::npos);
  }
}

TEST(RowAddress, BuildsVersionedAddresses) {
  EXPECT_EQ(row_address("steps", "k1"), "rows/v1/steps/k1");
  EXPECT_EQ(row_address("leases", "k1/3", 2), "rows/v2/leases/k1/3");
  EXPECT_TRUE(check_row_address(row_address("steps", "sha256:" + std::string(64, 'f'))).ok());
}

struct AddressCase {
  const char* address;
  const char* error;  // nullptr when valid; else a fragment of the message
};

TEST(RowAddress, ChecksEveryComponent) {
  const AddressCase cases[] = {
      {"rows/v1/steps/k", nullptr},
      {"rows/v12/leases/k/0", nullptr},
      {"rows/v1/steps/a.b_c:d+e=f-g", nullptr},
      {"rows/v1/steps", "expected rows/v<N>/<kind>/<key>"},
      {"objects/v1/steps/k", "must start with \"rows/\""},
      {"rows/1/steps/k", "row format version"},
      {"rows/v0/steps/k", "row format version"},
      {"rows/v01/steps/k", "row format version"},
      {"rows/v1/steps/", "component 4: empty"},
      {"/rows/v1/steps/k", "component 1: empty"},
      {"rows/v1//k", "component 3: empty"},
      {"rows/v1/steps/..", "starts with '.'"},
      {"rows/v1/steps/.tmp.1", "starts with '.'"},
      {"rows/v1/steps/a b", "character ' '"},
      {"rows/v1/steps/a\\b", "character"},
      {"rows/v1/steps/\xff", "\\xff"},
  };
  for (const auto& c : cases) {
    auto r = check_row_address(c.address);
    if (c.error == nullptr) {
      EXPECT_TRUE(r.ok()) << c.address << ": " << r.error().message();
    } else {
      ASSERT_FALSE(r.ok()) << c.address;
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
      EXPECT_NE(r.error().message().find(c.error), std::string::npos)
          << c.address << " -> " << r.error().message();
    }
  }
}

TEST(RowAddress, BoundsLength) {
  EXPECT_FALSE(check_row_address("rows/v1/steps/" + std::string(201, 'a')).ok());
  std::string deep = "rows/v1/steps";
  while (deep.size() <= kMaxAddressBytes) deep += "/abcdefgh";
  EXPECT_FALSE(check_row_address(deep).ok());
}

TEST(RowPrefix, AcceptsAnyLeadingRunOfComponents) {
  for (const char* ok : {"rows", "rows/", "rows/v1", "rows/v1/steps", "rows/v1/steps/"}) {
    EXPECT_TRUE(check_row_prefix(ok).ok()) << ok;
  }
  for (const char* bad : {"", "/", "row", "rows/x", "rows//v1", "objects"}) {
    EXPECT_FALSE(check_row_prefix(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace berth::store
