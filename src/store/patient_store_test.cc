#include "store/patient_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "store/memory_store.h"
#include "util/fake_clock_for_test.h"

namespace berth::store {
namespace {

using std::chrono::milliseconds;

// A MemoryStore whose operations fail with `code` while `down` is above zero (each
// failure counts it down), and whose put_row can write and then lose its answer.
class FlakyStore : public MemoryStore {
 public:
  std::atomic<int> down{0};
  Errc code = Errc::kUnavailable;
  bool lose_put_row_answer = false;
  std::atomic<int> calls{0};

  Result<std::string> put_object(std::string_view bytes) override {
    ++calls;
    if (take_down()) return fail(code, "connection refused");
    return MemoryStore::put_object(bytes);
  }
  Result<std::optional<std::string>> get_row(std::string_view address) override {
    ++calls;
    if (take_down()) return fail(code, "connection refused");
    return MemoryStore::get_row(address);
  }
  Result<bool> has_object(std::string_view name) override {
    ++calls;
    ++single_asks;
    if (take_down()) return fail(code, "connection refused");
    return MemoryStore::has_object(name);
  }
  // The default batch asks has_object() one by one, where a failed question reads as
  // absent; counted apart so a test sees which answers were asked again.
  void has_objects(std::span<const std::string> names, std::span<char> present) override {
    ++batches;
    int singles = single_asks;
    MemoryStore::has_objects(names, present);
    single_asks = singles;
  }
  std::atomic<int> single_asks{0};
  std::atomic<int> batches{0};
  Result<RowPut> put_row(std::string_view address, std::string_view bytes) override {
    ++calls;
    if (lose_put_row_answer) {
      lose_put_row_answer = false;
      (void)MemoryStore::put_row(address, bytes);
      return fail(Errc::kUnavailable, "connection reset by peer");
    }
    if (take_down()) return fail(code, "connection refused");
    return MemoryStore::put_row(address, bytes);
  }

 private:
  // One failure of the outage, if any is left.
  bool take_down() {
    int d = down.load();
    while (d > 0) {
      if (down.compare_exchange_weak(d, d - 1)) return true;
    }
    return false;
  }
};

struct Rig {
  FakeClock clock;
  FlakyStore* flaky = nullptr;
  std::vector<milliseconds> sleeps;
  std::vector<std::string> told;
  std::unique_ptr<PatientStore> store;

  explicit Rig(milliseconds patience = std::chrono::seconds(60)) {
    auto f = std::make_unique<FlakyStore>();
    flaky = f.get();
    Patience p;
    p.patience = patience;
    p.sleep = [this](milliseconds d) {
      sleeps.push_back(d);
      clock.advance(d);
    };
    p.on_wait = [this](const std::string& s, const Error& e) {
      told.push_back("wait " + s + ": " + e.message());
    };
    p.on_back = [this](const std::string& s, milliseconds away) {
      told.push_back("back " + s + " " + std::to_string(away.count()));
    };
    store = std::make_unique<PatientStore>(std::move(f), std::move(p), clock);
  }
};

TEST(PatientStore, WaitsOutAnOutageWithGrowingPauses) {
  Rig s;
  s.flaky->down = 5;
  auto name = s.store->put_object("bytes");
  ASSERT_TRUE(name.ok()) << name.error().message();
  EXPECT_EQ(s.flaky->calls, 6);
  ASSERT_EQ(s.sleeps.size(), 5u);
  // 200 ms doubling, each drawn from [d/2, d].
  for (size_t i = 0; i < s.sleeps.size(); ++i) {
    int64_t d = 200LL << i;
    EXPECT_GE(s.sleeps[i].count(), d / 2) << i;
    EXPECT_LE(s.sleeps[i].count(), d) << i;
  }
  // Told once when it went away, once when it came back.
  ASSERT_EQ(s.told.size(), 2u);
  EXPECT_EQ(s.told[0], "wait memory:: connection refused");
  EXPECT_EQ(s.told[1].rfind("back memory: ", 0), 0u) << s.told[1];
  StoreWaits w = s.store->stats();
  EXPECT_EQ(w.outages, 1u);
  EXPECT_GT(w.waited.count(), 0);
  EXPECT_EQ(w.gave_up, 0u);
  EXPECT_EQ(s.store->waiting(), "");
}

TEST(PatientStore, GivesUpPastThePatienceNamingStoreAndError) {
  Rig s(milliseconds(3000));
  s.flaky->down = 1000;
  auto r = s.store->get_row(row_address("steps", "k"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kUnavailable);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("the store memory: did not answer for 3.0 s"), std::string::npos) << m;
  EXPECT_NE(m.find("connection refused"), std::string::npos) << m;
  EXPECT_EQ(s.store->stats().gave_up, 1u);
  // The outage is still open: the progress line says so.
  EXPECT_EQ(s.store->waiting(), "waiting 3 s for memory:");
  // Never slept past the patience.
  milliseconds total{0};
  for (auto d : s.sleeps) total += d;
  EXPECT_EQ(total.count(), 3000);
}

TEST(PatientStore, ABatchOfQuestionsAsksAgainOnlyWhatReadAsAbsent) {
  Rig s;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back(*s.flaky->put_object("o" + std::to_string(i)));
  names.push_back(object_name_of("never stored"));
  // The store is away for the first two questions of the batch: they read as absent
  // there, and are asked again, patiently, with the one truly absent.
  s.flaky->down = 2;
  std::vector<char> present(names.size(), 7);
  s.store->has_objects(names, present);
  EXPECT_EQ(s.flaky->batches, 1);
  EXPECT_EQ(std::vector<char>(present.begin(), present.end()),
            (std::vector<char>{1, 1, 1, 1, 0}));
  // Two failed in the batch (not counted as single asks), then three asked alone:
  // the two absent-by-failure and the never-stored one.
  EXPECT_EQ(s.flaky->single_asks, 3);
  EXPECT_TRUE(s.sleeps.empty());  // the store was back when they were asked again
}

TEST(PatientStore, OtherErrorsAreNotRetried) {
  Rig s;
  s.flaky->down = 1;
  s.flaky->code = Errc::kIo;
  EXPECT_FALSE(s.store->put_object("x").ok());
  EXPECT_EQ(s.flaky->calls, 1);
  EXPECT_TRUE(s.sleeps.empty());
  EXPECT_TRUE(s.told.empty());
}

TEST(PatientStore, ARowWrittenWhoseAnswerWasLostIsOurs) {
  Rig s;
  s.flaky->lose_put_row_answer = true;
  auto r = s.store->put_row(row_address("leases", "k/1"), "holder=me");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->created);
  // Someone else's bytes are still someone else's.
  auto again = s.store->put_row(row_address("leases", "k/1"), "holder=other");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->existing, "holder=me");
}

TEST(PatientStore, ManyThreadsMeetOneOutageAndAllSucceed) {
  auto f = std::make_unique<FlakyStore>();
  f->down = 40;
  std::atomic<int> waits{0}, backs{0};
  Patience p;
  p.first_delay = milliseconds(1);
  p.max_delay = milliseconds(2);
  p.on_wait = [&](const std::string&, const Error&) { ++waits; };
  p.on_back = [&](const std::string&, milliseconds) { ++backs; };
  PatientStore store(std::move(f), std::move(p), Clock::real());
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] {
      if (store.put_object("o" + std::to_string(i)).ok()) ++ok;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 8);
  // Every outage told is told ended, and there was at least one.
  EXPECT_GE(waits.load(), 1);
  EXPECT_EQ(waits.load(), backs.load());
  EXPECT_EQ(store.stats().outages, static_cast<size_t>(backs.load()));
}

}  // namespace
}  // namespace berth::store
