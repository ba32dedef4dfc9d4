// verify_store: every object the step rows name, trees opened, missing and corrupt
// objects counted bad rather than failing the check.
#include "pipeline/store_verify.h"

#include <gtest/gtest.h>

#include "store/memory_store.h"

namespace berth::pipeline {
namespace {

std::string row_naming(const std::string& object, const char* form = "bytes") {
  return R"({"version":1,"key":"k","step":"s","outputs":{"o":{"object":")" + object +
         R"(","form":")" + form + R"("}}})";
}

TEST(StoreVerify, ChecksEveryObjectTheStepRowsNameAndCountsTheBadOnes) {
  store::MemoryStore s;
  auto good = s.put_object("good");
  auto bad = s.put_object("bad");
  ASSERT_TRUE(good.ok() && bad.ok());
  s.plant_corrupt_object_for_test(*bad, "tampered");
  const std::string missing = "sha256:" + std::string(64, '0');
  ASSERT_TRUE(s.put_row(store::row_address("steps", "k1"), row_naming(*good)).ok());
  ASSERT_TRUE(s.put_row(store::row_address("steps", "k2"), row_naming(*bad)).ok());
  ASSERT_TRUE(s.put_row(store::row_address("steps", "k3"), row_naming(missing)).ok());
  auto r = verify_store(s, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->objects.size(), 3u);
  EXPECT_EQ(r->bad(), 2u);
  for (const auto& o : r->objects) EXPECT_EQ(o.ok, o.name == *good) << o.name;
}

TEST(StoreVerify, ChecksOnlyTheNamedObjectsWhenGiven) {
  store::MemoryStore s;
  auto a = s.put_object("a");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(
      s.put_row(store::row_address("steps", "k"), row_naming("sha256:" + std::string(64, '1')))
          .ok());
  auto r = verify_store(s, {*a});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].name, *a);
  EXPECT_EQ(r->bad(), 0u);
}

TEST(StoreVerify, AnEmptyStoreHasNothingToVerify) {
  store::MemoryStore s;
  auto r = verify_store(s, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->objects.empty());
}

}  // namespace
}  // namespace berth::pipeline
