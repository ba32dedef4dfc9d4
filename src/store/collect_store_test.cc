// Collection at the store (spec 05 §10): entries' times, refreshes, and collect()'s
// hold-then-decide that cannot lose an entry a writer is using — with real files, and
// the writer's moves made at the moments that matter.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "store/file_store.h"
#include "store/memory_store.h"
#include "store/testing.h"
#include "util/clock.h"
#include "util/fake_clock_for_test.h"
#include "util/files.h"

namespace berth::store {
namespace {

using namespace std::chrono_literals;

int64_t ms_of(const Clock& c) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(c.wall().time_since_epoch()).count();
}

// Sets a file's atime and mtime to `ms`, as `touch -d` would.
void age(const std::string& path, int64_t ms) {
  timespec t[2];
  t[0].tv_sec = t[1].tv_sec = ms / 1000;
  t[0].tv_nsec = t[1].tv_nsec = (ms % 1000) * 1'000'000;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
}

int64_t time_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return std::max(int64_t{st.st_atim.tv_sec} * 1000 + st.st_atim.tv_nsec / 1'000'000,
                  int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000);
}

// A store whose clock is the real one (times are the file system's), and a "day ago".
struct Fixture {
  testing::TempDir d;
  std::unique_ptr<FileStore> s;
  int64_t now = ms_of(Clock::real());
  int64_t day_ago = now - 24 * 3600 * 1000;
  int64_t cutoff = now - 2 * 3600 * 1000;  // a two-hour grace
  Fixture() {
    auto opened = FileStore::open(d / "s");
    EXPECT_TRUE(opened.ok());
    s = std::move(*opened);
  }
  std::string object(const std::string& bytes, bool old = true) {
    auto n = s->put_object(bytes);
    EXPECT_TRUE(n.ok());
    if (old) age(s->object_path(*n), day_ago);
    return *n;
  }
  std::function<Result<std::set<std::string>>()> none = [] {
    return Result<std::set<std::string>>(std::set<std::string>{});
  };
};

TEST(CollectStore, ListsObjectsRowsAndDebrisWithSizesAndTimes) {
  Fixture f;
  std::string a = f.object("aaaa");
  ASSERT_TRUE(f.s->put_row("rows/v1/steps/k", "row!").ok());
  ASSERT_TRUE(files::write_file_atomic(f.d / "s/objects/.tmp.1.x.1", "half").ok());
  auto objects = f.s->list_objects();
  ASSERT_TRUE(objects.ok());
  ASSERT_EQ(objects->size(), 1u);
  EXPECT_EQ((*objects)[0].name, a);
  EXPECT_EQ((*objects)[0].bytes, 4u);
  EXPECT_EQ((*objects)[0].time_ms, f.day_ago);
  auto rows = f.s->list_row_entries("rows");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name, "rows/v1/steps/k");
  EXPECT_GE((*rows)[0].time_ms, f.now - 60'000);
  auto debris = f.s->list_debris();
  ASSERT_TRUE(debris.ok());
  ASSERT_EQ(debris->size(), 1u);
  EXPECT_EQ((*debris)[0].name, "objects/.tmp.1.x.1");
}

TEST(CollectStore, AUseRefreshesAnOldEntrysAtimeAndLeavesItsMtime) {
  Fixture f;
  std::string a = f.object("used");
  std::string path = f.s->object_path(a);
  ASSERT_TRUE(*f.s->has_object(a));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(int64_t{st.st_mtim.tv_sec} * 1000, f.day_ago / 1000 * 1000) << "a result's stamp";
  EXPECT_GE(time_of(path), f.now - 60'000);
  // A young entry is not written to at all.
  int64_t recent = f.now - 60'000;
  age(path, recent);
  ASSERT_TRUE(*f.s->has_object(a));
  EXPECT_EQ(time_of(path), recent);
  // Rows too.
  ASSERT_TRUE(f.s->put_row("rows/v1/steps/k", "row").ok());
  age(f.s->row_path("rows/v1/steps/k"), f.day_ago);
  EXPECT_TRUE(*f.s->touch_row("rows/v1/steps/k"));
  EXPECT_GE(time_of(f.s->row_path("rows/v1/steps/k")), f.now - 60'000);
  EXPECT_FALSE(*f.s->touch_row("rows/v1/steps/none"));
}

// Asking about many objects at once (an edited rerun's reused steps) is a use too: an
// old object is refreshed, a young one left as it is.
TEST(CollectStore, AskingAboutManyAtOnceRefreshesTheOldOnes) {
  Fixture f;
  std::string old_a = f.object("old a");
  std::string young = f.object("young", false);
  int64_t recent = f.now - 60'000;
  age(f.s->object_path(young), recent);
  std::vector<std::string> names{old_a, young, "sha256:" + std::string(64, '0')};
  std::vector<char> present(names.size(), 9);
  f.s->has_objects(names, present);
  EXPECT_EQ(present, (std::vector<char>{1, 1, 0}));
  EXPECT_GE(time_of(f.s->object_path(old_a)), f.now - 60'000) << "refreshed";
  EXPECT_EQ(time_of(f.s->object_path(young)), recent) << "not written to";
}

TEST(CollectStore, DeletesWhatIsOldAndNotSpared) {
  Fixture f;
  std::string old_a = f.object("old a");
  std::string old_b = f.object("old b");
  std::string young = f.object("young", false);
  auto gone = f.s->collect(EntryKind::kObject, {old_a, old_b, young}, f.cutoff,
                           [&]() -> Result<std::set<std::string>> { return std::set{old_b}; });
  ASSERT_TRUE(gone.ok()) << gone.error().message();
  EXPECT_EQ(*gone, std::vector<std::string>{old_a});
  EXPECT_FALSE(*f.s->has_object(old_a));
  EXPECT_TRUE(f.s->get_object(old_b)->present()) << "spared: put back whole";
  EXPECT_TRUE(f.s->get_object(young)->present());
  EXPECT_TRUE(std::filesystem::is_empty(f.d / "s/.gc")) << "the hold is gone";
}

// The race: a writer is about to publish a row naming an old object. Whether its
// refresh comes before the collector takes the object out of sight or after, the
// object is there once the writer publishes.
TEST(CollectStore, AWriterRefreshingBeforeTheHoldKeepsTheObject) {
  Fixture f;
  std::string x = f.object("shared result");
  // The writer's has_object() ran just before the collector's hold: x is young again.
  ASSERT_TRUE(*f.s->has_object(x));
  auto gone = f.s->collect(EntryKind::kObject, {x}, f.cutoff, f.none);
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->empty());
  EXPECT_TRUE(f.s->get_object(x)->present());
}

TEST(CollectStore, AWriterRefreshingDuringTheHoldFindsItGoneAndWritesItAgain) {
  Fixture f;
  std::string x = f.object("shared result");
  bool saw_gone = false;
  auto gone = f.s->collect(EntryKind::kObject, {x}, f.cutoff, [&]() -> Result<std::set<std::string>> {
    // Inside the hold: the writer checks x (absent), stores it again, publishes its row.
    auto has = f.s->has_object(x);
    EXPECT_TRUE(has.ok());
    saw_gone = !*has;
    EXPECT_EQ(*f.s->put_object("shared result"), x);
    EXPECT_TRUE(f.s->put_row("rows/v1/steps/w", "names x").ok());
    return std::set<std::string>{};
  });
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(saw_gone);
  EXPECT_EQ(*gone, std::vector<std::string>{x}) << "the old copy went";
  EXPECT_TRUE(f.s->get_object(x)->present()) << "the writer's copy stands";
}

TEST(CollectStore, AnAdoptedOutputWithOldTimesIsYoungOnceStored) {
  Fixture f;
  std::string out = f.d / "out";
  ASSERT_TRUE(files::write_file_atomic(out, "written long ago").ok());
  age(out, f.day_ago);  // a step that ran for a day
  auto name = f.s->adopt_object_file(out);
  ASSERT_TRUE(name.ok());
  EXPECT_GE(time_of(f.s->object_path(*name)), f.now - 60'000);
  auto gone = f.s->collect(EntryKind::kObject, {*name}, f.cutoff, f.none);
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->empty());
}

TEST(CollectStore, RowsAndLeaseDirectoriesGoAndCanBeWrittenAgain) {
  Fixture f;
  const std::string lease = "rows/v1/leases/k1/0";
  ASSERT_TRUE(f.s->put_row(lease, "old claim").ok());
  age(f.s->row_path(lease), f.day_ago);
  auto gone = f.s->collect(EntryKind::kRow, {lease}, f.cutoff, f.none);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, std::vector<std::string>{lease});
  EXPECT_FALSE(files::exists(f.d / "s/rows/v1/leases/k1")) << "its empty directory too";
  auto again = f.s->put_row(lease, "new claim");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->created);
}

TEST(CollectStore, WhatADeadCollectorHeldIsPutBackByTheNext) {
  Fixture f;
  std::string x = f.object("held when it died");
  std::string held = f.d / "s/.gc/dead";
  ASSERT_TRUE(std::filesystem::create_directories(held));
  std::string rel = f.s->object_path(x).substr((f.d / "s/").size());
  std::replace(rel.begin(), rel.end(), '/', '%');
  ASSERT_EQ(::rename(f.s->object_path(x).c_str(), (held + "/" + rel).c_str()), 0);
  age(held, f.day_ago);
  EXPECT_FALSE(*f.s->has_object(x));
  ASSERT_TRUE(f.s->collect(EntryKind::kObject, {}, f.cutoff, f.none).ok());
  EXPECT_TRUE(f.s->get_object(x)->present());
  EXPECT_FALSE(files::exists(held));
}

TEST(CollectStore, MemoryStoreTimesFollowItsClock) {
  FakeClock clock;
  MemoryStore m;
  m.set_clock(&clock);
  auto a = m.put_object("a");
  ASSERT_TRUE(a.ok());
  clock.advance(3h);
  auto b = m.put_object("b");
  ASSERT_TRUE(b.ok());
  int64_t cutoff = ms_of(clock) - 2 * 3600 * 1000;
  auto gone = m.collect(EntryKind::kObject, {*a, *b}, cutoff,
                        []() -> Result<std::set<std::string>> { return std::set<std::string>{}; });
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, std::vector<std::string>{*a});
  EXPECT_FALSE(*m.has_object(*a));
  EXPECT_TRUE(*m.has_object(*b));
}

}  // namespace
}  // namespace berth::store
