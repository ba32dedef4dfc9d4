#include "store/tiered_store.h"

#include <gtest/gtest.h>

#include <memory>

#include "store/memory_store.h"

namespace berth::store {
namespace {

struct Tiers {
  MemoryStore* local;
  MemoryStore* shared;
  std::unique_ptr<TieredStore> store;
};

Tiers make() {
  auto local = std::make_unique<MemoryStore>();
  auto shared = std::make_unique<MemoryStore>();
  Tiers t{local.get(), shared.get(), nullptr};
  t.store = std::make_unique<TieredStore>(std::move(local), std::move(shared));
  return t;
}

TEST(TieredStore, ObjectsAreWrittenToBothTiers) {
  auto t = make();
  std::string name = *t.store->put_object("o");
  EXPECT_TRUE(*t.local->has_object(name));
  EXPECT_TRUE(*t.shared->has_object(name));
}

TEST(TieredStore, ASharedHitIsCachedLocally) {
  auto t = make();
  std::string name = *t.shared->put_object("from elsewhere");
  EXPECT_FALSE(*t.local->has_object(name));
  auto r = t.store->get_object(name);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, "from elsewhere");
  EXPECT_TRUE(*t.local->has_object(name));
}

TEST(TieredStore, ACorruptLocalCopyIsReplacedFromSharedAndReported) {
  auto t = make();
  std::string name = *t.store->put_object("good");
  t.local->plant_corrupt_object_for_test(name, "bad!");
  auto r = t.store->get_object(name);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->present());
  EXPECT_EQ(r->bytes, "good");
  EXPECT_NE(r->problem.find("memory:"), std::string::npos) << r->problem;
  EXPECT_EQ(t.local->get_object(name)->bytes, "good");  // repaired
}

TEST(TieredStore, CorruptEverywhereIsCorrupt) {
  auto t = make();
  std::string name = object_name_of("x");
  t.local->plant_corrupt_object_for_test(name, "y");
  t.shared->plant_corrupt_object_for_test(name, "z");
  auto r = t.store->get_object(name);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kCorrupt);
}

TEST(TieredStore, ABatchOfQuestionsPutsBackWhatOnlyTheLocalTierHolds) {
  auto t = make();
  std::string both = *t.store->put_object("both");
  std::string local_only = *t.local->put_object("local only");
  std::string nowhere = object_name_of("nowhere");
  std::vector<std::string> names{both, local_only, nowhere};
  std::vector<char> present(names.size(), 7);
  t.store->has_objects(names, present);
  EXPECT_EQ(std::vector<char>(present.begin(), present.end()), (std::vector<char>{1, 1, 0}));
  // Every worker must find what a row built on this answer names.
  EXPECT_TRUE(*t.shared->has_object(local_only));
  EXPECT_FALSE(*t.shared->has_object(nowhere));
}

TEST(TieredStore, RowsNeverTouchTheLocalTier) {
  // Spec 05 §7: a lease written through the local tier is invisible to every other
  // worker, so distribution and divergence detection would be silently absent.
  auto t = make();
  std::string addr = row_address("leases", "k/0");
  ASSERT_TRUE(t.store->put_row(addr, "worker a")->created);
  EXPECT_EQ(t.local->row_count(), 0u);
  EXPECT_EQ(t.shared->row_count(), 1u);
  // Another worker's row, written straight to the shared store, is what we read back.
  std::string other = row_address("leases", "k/1");
  ASSERT_TRUE(t.shared->put_row(other, "worker b")->created);
  EXPECT_EQ(**t.store->get_row(other), "worker b");
  auto lost = t.store->put_row(other, "worker a");
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(lost->created);
  EXPECT_EQ(lost->existing, "worker b");
  EXPECT_EQ(t.store->list_rows("rows/v1/leases")->size(), 2u);
  EXPECT_EQ(&t.store->shared(), t.shared);
}

}  // namespace
}  // namespace berth::store
