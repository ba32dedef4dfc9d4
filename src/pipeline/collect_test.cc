// Collection (collect.h): roots, reach and the order of deletion over a MemoryStore
// whose entries' times follow a FakeClock.
#include "pipeline/collect.h"
#include "util/fake_clock_for_test.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "pipeline/lease.h"
#include "store/memory_store.h"

namespace berth::pipeline {
namespace {

using namespace std::chrono_literals;

std::string steps_row(const std::string& key) { return store::row_address("steps", key); }

// A store, its clock, and helpers that write what runs write.
class CollectTest : public ::testing::Test {
 protected:
  void SetUp() override { store_.set_clock(&clock_); }

  std::string object(const std::string& bytes) { return *store_.put_object(bytes); }
  // A step row for `key` naming an output object and a log.
  void row(const std::string& key, const std::string& out, const std::string& log) {
    ASSERT_TRUE(store_
                    .put_row(steps_row(key),
                             fmt::format(R"({{"version":1,"key":"{}","outputs":{{"o":{{"object":"{}",)"
                                         R"("form":"bytes","canonical":"{}"}}}},"log":"{}"}})",
                                         key, out, out, log))
                    .ok());
  }
  // A run's report: its steps (JSON objects) in an object, the report in a row.
  void run(const std::string& id, const std::string& pipeline, const std::string& started,
           const std::vector<std::string>& steps) {
    std::string array = "[";
    for (size_t i = 0; i < steps.size(); ++i) array += (i ? "," : "") + steps[i];
    array += "]";
    std::string steps_object = object(array);
    ASSERT_TRUE(store_
                    .put_row(store::row_address("runs", id),
                             fmt::format(R"({{"version":1,"pipeline":"{}","started":"{}",)"
                                         R"("steps_object":"{}"}})",
                                         pipeline, started, steps_object))
                    .ok());
  }
  static std::string step(const std::string& key, const std::string& out, const std::string& log,
                          const std::string& state = "executed") {
    return fmt::format(R"({{"name":"s","state":"{}","key":"{}","outputs":{{"o":{{"object":"{}"}}}},)"
                       R"("log":"{}"}})",
                       state, key, out, log);
  }
  std::set<std::string> deleted(const CollectReport& r, const std::string& kind) {
    std::set<std::string> out;
    for (const auto& d : r.deleted) {
      if (d.kind == kind) out.insert(d.name);
    }
    return out;
  }
  CollectReport collect(CollectOptions o, store::ObjectStore* s = nullptr) {
    o.clock = &clock_;
    auto r = collect_store(s ? *s : store_, o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : CollectReport{};
  }

  FakeClock clock_;
  store::MemoryStore store_;
};

TEST_F(CollectTest, KeepsWhatTheLastRunsReachAndDeletesTheRest) {
  // Run A (pipeline p): k1 executed, and a failed step with only a log. Run B
  // (pipeline q), later: k2. A row nothing reaches (k3), an object nothing names (a
  // divergence's losing copy), lease rows of a key nobody holds and one live claim.
  std::string o1 = object("o1"), l1 = object("l1"), l2 = object("l2");
  std::string o2 = object("o2"), l_2 = object("log 2"), o3 = object("o3"), loser = object("o4");
  row("k1", o1, l1);
  row("k2", o2, l_2);
  row("k3", o3, l_2);
  run("a", "p", "2023-11-14T00:00:00Z",
      {step("k1", o1, l1), step("kf", "", l2, "failed")});
  run("b", "q", "2023-11-15T00:00:00Z", {step("k2", o2, l_2)});
  Leases w(store_, "w", "tok", clock_, 1h);
  ASSERT_TRUE(w.acquire("k1").ok());
  ASSERT_TRUE(w.release("k1", 0).ok());
  clock_.advance(8 * 24h);
  Leases live(store_, "v", "tok2", clock_, 30 * 24h);
  ASSERT_TRUE(live.acquire("k9").ok());
  store_.set_time_for_test(lease_address("k9", 0), 0);  // old, but its claim is live

  CollectOptions o;
  o.keep_runs = 1;
  CollectReport r = collect(o);
  EXPECT_EQ(r.runs, 2u);
  EXPECT_EQ(r.runs_kept, 1u);
  EXPECT_EQ(deleted(r, "run"), (std::set<std::string>{"rows/v1/runs/a"}));
  EXPECT_EQ(deleted(r, "step row"), (std::set<std::string>{steps_row("k1"), steps_row("k3")}));
  EXPECT_EQ(deleted(r, "lease row"),
            (std::set<std::string>{lease_address("k1", 0), lease_address("k1", 1)}));
  std::set<std::string> objects = deleted(r, "object");
  for (const auto& gone : {o1, l1, l2, o3, loser}) EXPECT_TRUE(objects.count(gone)) << gone;
  EXPECT_EQ(objects.size(), 6u) << "and run a's steps object";
  for (const auto& kept : {o2, l_2}) EXPECT_TRUE(*store_.has_object(kept)) << kept;
  EXPECT_TRUE(store_.get_row(steps_row("k2"))->has_value());
  EXPECT_TRUE(store_.get_row(lease_address("k9", 0))->has_value());
  EXPECT_GT(r.bytes(), 0u);
}

TEST_F(CollectTest, ANamedPipelinesLastRunsAreKeptToo) {
  std::string o1 = object("o1"), o2 = object("o2");
  row("k1", o1, o1);
  row("k2", o2, o2);
  run("a", "p", "2023-11-14T00:00:00Z", {step("k1", o1, o1)});
  run("b", "q", "2023-11-15T00:00:00Z", {step("k2", o2, o2)});
  clock_.advance(8 * 24h);
  CollectOptions o;
  o.keep_runs = 1;
  o.pipelines = {"p"};
  CollectReport r = collect(o);
  EXPECT_EQ(r.runs_kept, 2u);
  EXPECT_TRUE(r.deleted.empty());
}

TEST_F(CollectTest, EntriesCarriedInARunsRowAreReachedToo) {
  // A run that executed a few steps names the steps a rerun reports and carries its
  // entries that differ from those in its row ("steps_changed"): what they name is kept
  // with the rest.
  std::string o1 = object("o1"), l1 = object("l1"), o2 = object("o2"), l2 = object("l2");
  row("k1", o1, l1);
  row("k2", o2, l2);
  std::string steps = object("[" + step("k1", o1, l1, "cached") + "]");
  ASSERT_TRUE(store_
                  .put_row(store::row_address("runs", "a"),
                           fmt::format(R"({{"version":1,"pipeline":"p","started":"{}",)"
                                       R"("steps_object":"{}","steps_changed":[{}]}})",
                                       "2023-11-14T00:00:00Z", steps, step("k2", o2, l2)))
                  .ok());
  clock_.advance(8 * 24h);
  CollectOptions o;
  o.keep_runs = 1;
  CollectReport r = collect(o);
  EXPECT_EQ(r.runs_kept, 1u);
  EXPECT_TRUE(r.deleted.empty()) << r.deleted.front().name;
  EXPECT_TRUE(store_.get_row(steps_row("k2"))->has_value());
}

TEST_F(CollectTest, NothingYoungerThanTheGracePeriodGoes) {
  std::string o1 = object("o1");
  row("k1", o1, o1);                // a worker's row, its run not finished
  object("written a minute ago");  // nothing names it yet
  clock_.advance(1h);
  CollectOptions o;
  o.keep_runs = 0;
  o.grace = 2h;
  EXPECT_TRUE(collect(o).deleted.empty());
  clock_.advance(2h);
  EXPECT_EQ(collect(o).deleted.size(), 3u);
}

TEST_F(CollectTest, ADryRunSaysWhatAndHowManyBytesAndDeletesNothing) {
  std::string loser = object("twelve bytes");
  clock_.advance(8 * 24h);
  CollectOptions o;
  o.dry_run = true;
  CollectReport r = collect(o);
  ASSERT_EQ(r.deleted.size(), 1u);
  EXPECT_EQ(r.deleted[0].kind, "object");
  EXPECT_EQ(r.deleted[0].name, loser);
  EXPECT_EQ(r.deleted[0].bytes, 12u);
  EXPECT_TRUE(*store_.has_object(loser));
}

// A store that runs a hook inside collect(), after its entries' times were read and
// before its `spare` answers: a worker publishing just then.
class Interleaved : public store::ObjectStore {
 public:
  explicit Interleaved(store::MemoryStore& inner) : in_(inner) {}
  std::function<void(store::EntryKind)> during;
  std::string describe() const override { return in_.describe(); }
  Result<std::string> put_object(std::string_view b) override { return in_.put_object(b); }
  Result<std::string> put_object_file(const std::string& p) override { return in_.put_object_file(p); }
  Result<store::ObjectRead> get_object(std::string_view n) override { return in_.get_object(n); }
  Result<store::ObjectRead> get_object_to_file(std::string_view n, const std::string& d) override {
    return in_.get_object_to_file(n, d);
  }
  Result<bool> has_object(std::string_view n) override { return in_.has_object(n); }
  Result<store::RowPut> put_row(std::string_view a, std::string_view b) override {
    return in_.put_row(a, b);
  }
  Result<std::optional<std::string>> get_row(std::string_view a) override { return in_.get_row(a); }
  Result<std::vector<std::string>> list_rows(std::string_view p) override { return in_.list_rows(p); }
  Result<std::vector<store::StoreEntry>> list_objects() override { return in_.list_objects(); }
  Result<std::vector<store::StoreEntry>> list_row_entries(std::string_view p) override {
    return in_.list_row_entries(p);
  }
  Result<std::vector<store::StoreEntry>> list_debris() override { return in_.list_debris(); }
  Result<std::vector<std::string>> collect(
      store::EntryKind kind, const std::vector<std::string>& names, int64_t cutoff,
      const std::function<Result<std::set<std::string>>()>& spare) override {
    return in_.collect(kind, names, cutoff, [&]() -> Result<std::set<std::string>> {
      if (during) during(kind);
      return spare();
    });
  }

 private:
  store::MemoryStore& in_;
};

TEST_F(CollectTest, AnObjectARowPublishedDuringTheCollectionNamesIsSpared) {
  // An old object nothing names; while the collector decides, a worker publishes a row
  // naming it (without refreshing it: the collector must learn it from the row), and a
  // run's report naming an old row.
  std::string x = object("about to be named");
  std::string y = object("named by an old row");
  row("old", y, y);
  clock_.advance(8 * 24h);
  Interleaved s(store_);
  s.during = [&](store::EntryKind kind) {
    if (kind == store::EntryKind::kRow && !store_.get_row(steps_row("new"))->has_value()) {
      row("new", x, x);
      run("late", "p", "2023-11-20T00:00:00Z", {step("old", y, y)});
    }
  };
  CollectOptions o;
  o.keep_runs = 0;
  CollectReport r = collect(o, &s);
  EXPECT_TRUE(*store_.has_object(x));
  EXPECT_TRUE(*store_.has_object(y));
  EXPECT_TRUE(store_.get_row(steps_row("old"))->has_value()) << "a late run's report names it";
  EXPECT_TRUE(deleted(r, "object").empty());
}

TEST_F(CollectTest, ABackendThatCannotBeCollectedSaysSo) {
  class Plain : public store::MemoryStore {
   public:
    Result<std::vector<store::StoreEntry>> list_objects() override {
      return ObjectStore::list_objects();
    }
  } plain;
  auto r = collect_store(plain, CollectOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kUnsupported);
}

}  // namespace
}  // namespace berth::pipeline
