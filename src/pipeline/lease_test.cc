#include "pipeline/lease.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <climits>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "store/memory_store.h"
#include "util/fake_clock_for_test.h"
#include "store/tiered_store.h"

namespace berth::pipeline {
namespace {

using namespace std::chrono_literals;
using Outcome = Leases::Outcome;
using Claim = Leases::Claim;

constexpr std::string_view kKey =
    "3f0c0b1e8d5a4c2f9e7d6b5a4c3b2a1908f7e6d5c4b3a29181706f5e4d3c2b1a";
constexpr auto kDuration = 30s;

int64_t ms_of(const FakeClock& c) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(c.wall().time_since_epoch()).count();
}

// Fails the test on an error and hands back a default value so the test can go on.
template <typename T>
T ok(Result<T> r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? std::move(r).value() : T{};
}

std::optional<std::string> row_at(store::ObjectStore& s, unsigned generation) {
  return ok(s.get_row(lease_address(kKey, generation)));
}

void plant(store::ObjectStore& s, unsigned generation, const std::string& bytes) {
  auto put = s.put_row(lease_address(kKey, generation), bytes);
  ASSERT_TRUE(put.ok()) << put.error().message();
  ASSERT_TRUE(put->created);
}

LeaseRecord record(std::string worker, std::string token, int64_t start, int64_t deadline,
                   bool released = false) {
  return LeaseRecord{std::move(worker), std::move(token), start, deadline, released};
}

// ---- Store decorators for the races -------------------------------------------------

// Forwards every call to `inner`, with hooks around put_row and a filter on get_row,
// so a test can make another worker's write land at a chosen moment.
class HookStore : public store::ObjectStore {
 public:
  explicit HookStore(store::ObjectStore& inner) : inner_(inner) {}

  // Run once, just before (after) the next put_row is forwarded.
  std::function<void()> before_put;
  std::function<void()> after_put;
  // Given (address, what the inner store holds); returns what the reader is told.
  std::function<std::optional<std::string>(std::string_view, std::optional<std::string>)>
      filter_get;
  // put_row calls to these addresses are answered "created" and go nowhere.
  std::set<std::string, std::less<>> black_hole;

  std::string describe() const override { return "hook(" + inner_.describe() + ")"; }
  Result<std::string> put_object(std::string_view b) override { return inner_.put_object(b); }
  Result<std::string> put_object_file(const std::string& p) override {
    return inner_.put_object_file(p);
  }
  Result<store::ObjectRead> get_object(std::string_view n) override { return inner_.get_object(n); }
  Result<store::ObjectRead> get_object_to_file(std::string_view n, const std::string& d) override {
    return inner_.get_object_to_file(n, d);
  }
  Result<bool> has_object(std::string_view n) override { return inner_.has_object(n); }
  Result<store::RowPut> put_row(std::string_view address, std::string_view bytes) override {
    ++puts;
    if (auto hook = std::exchange(before_put, nullptr)) hook();
    if (black_hole.count(address) > 0) return store::RowPut{true, ""};
    auto r = inner_.put_row(address, bytes);
    if (auto hook = std::exchange(after_put, nullptr)) hook();
    return r;
  }
  Result<std::optional<std::string>> get_row(std::string_view address) override {
    BERTH_TRY(std::optional<std::string> row, inner_.get_row(address));
    if (filter_get) return filter_get(address, std::move(row));
    return row;
  }
  Result<std::vector<std::string>> list_rows(std::string_view p) override {
    return inner_.list_rows(p);
  }

  int puts = 0;

 private:
  store::ObjectStore& inner_;
};

// Rows only, and every put_row overwrites and says created == true: a server that
// ignores If-None-Match, or a filesystem without link() or RENAME_NOREPLACE.
class OverwritingStore : public store::ObjectStore {
 public:
  std::string describe() const override { return "overwriting:"; }
  Result<std::string> put_object(std::string_view) override { return unsupported(); }
  Result<std::string> put_object_file(const std::string&) override { return unsupported(); }
  Result<store::ObjectRead> get_object(std::string_view) override { return unsupported(); }
  Result<store::ObjectRead> get_object_to_file(std::string_view, const std::string&) override {
    return unsupported();
  }
  Result<bool> has_object(std::string_view) override { return unsupported(); }
  Result<store::RowPut> put_row(std::string_view address, std::string_view bytes) override {
    std::lock_guard lock(mu_);
    rows_[std::string(address)] = bytes;
    return store::RowPut{true, ""};
  }
  Result<std::optional<std::string>> get_row(std::string_view address) override {
    std::lock_guard lock(mu_);
    auto it = rows_.find(address);
    if (it == rows_.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Result<std::vector<std::string>> list_rows(std::string_view) override { return unsupported(); }

 private:
  static Failure unsupported() { return fail(Errc::kUnsupported, "rows only"); }
  std::mutex mu_;
  std::map<std::string, std::string, std::less<>> rows_;
};

// Every row operation fails, as an unreachable bucket would.
class FailingStore : public OverwritingStore {
 public:
  Result<store::RowPut> put_row(std::string_view, std::string_view) override {
    return fail(Errc::kIo, "memory: unreachable");
  }
  Result<std::optional<std::string>> get_row(std::string_view) override {
    return fail(Errc::kIo, "memory: unreachable");
  }
};

// ---- Fixture ------------------------------------------------------------------------

class LeaseTest : public ::testing::Test {
 protected:
  Leases make(std::string worker, std::string token, store::ObjectStore* s = nullptr) {
    return Leases(s ? *s : store_, std::move(worker), std::move(token), clock_, kDuration);
  }

  store::MemoryStore store_;
  FakeClock clock_;
};

// ---- The row and its address --------------------------------------------------------

TEST(LeaseAddress, IsAVersionedRowUnderLeasesWithTheGenerationLast) {
  EXPECT_EQ(lease_address("abc", 0), "rows/v1/leases/abc/0");
  EXPECT_EQ(lease_address("abc", 15), "rows/v1/leases/abc/15");
  EXPECT_TRUE(store::check_row_address(lease_address(kKey, 7)).ok());
}

TEST(LeaseCodec, EncodesOneObjectWithItsKeysInOrder) {
  LeaseRecord r = record("n1", "0123456789abcdef0123456789abcdef", 1700000000000, 1700000030000);
  EXPECT_EQ(encode_lease(r),
            R"({"version":1,"worker":"n1","token":"0123456789abcdef0123456789abcdef",)"
            R"("start_ms":1700000000000,"deadline_ms":1700000030000,"released":false})");
  r.released = true;
  EXPECT_NE(encode_lease(r).find(R"("released":true})"), std::string::npos);
}

TEST(LeaseCodec, RoundTrips) {
  for (const LeaseRecord& r : {
           record("n1", "t", 0, 0),
           record("node-7", "ffffffffffffffffffffffffffffffff", 1700000000000, 1700000030000),
           record("", "t", -5, INT64_MAX, true),
           record("w\"quoted\\", "t\n", INT64_MIN, -1),
       }) {
    auto back = decode_lease(encode_lease(r));
    ASSERT_TRUE(back.has_value()) << encode_lease(r);
    EXPECT_EQ(*back, r);
  }
}

TEST(LeaseCodec, AcceptsWhitespaceAndAnyKeyOrder) {
  auto r = decode_lease(
      R"( { "released" : true, "deadline_ms":2, "start_ms":1, "token":"t", "worker":"w",
            "version":1 } )");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, record("w", "t", 1, 2, true));
}

TEST(LeaseCodec, RefusesEveryMalformedRecord) {
  const std::string good = encode_lease(record("n1", "tok", 1, 2));
  ASSERT_TRUE(decode_lease(good).has_value());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  struct Case {
    const char* what;
    std::string text;
  };
  const Case cases[] = {
      {"empty", ""},
      {"whitespace", "  \n"},
      {"garbage bytes", std::string("\x00\xff\xfe lease", 9)},
      {"null", "null"},
      {"a number", "1"},
      {"a string", "\"lease\""},
      {"an array", "[1,2]"},
      {"an empty object", "{}"},
      {"truncated", good.substr(0, good.size() - 1)},
      {"trailing garbage", good + "x"},
      {"two documents", good + good},
      {"version 2", with("\"version\":1", "\"version\":2")},
      {"version 0", with("\"version\":1", "\"version\":0")},
      {"version as a string", with("\"version\":1", "\"version\":\"1\"")},
      {"version as a float", with("\"version\":1", "\"version\":1.0")},
      {"version missing", with("\"version\":1,", "")},
      {"worker as a number", with("\"worker\":\"n1\"", "\"worker\":1")},
      {"worker null", with("\"worker\":\"n1\"", "\"worker\":null")},
      {"worker missing", with("\"worker\":\"n1\",", "")},
      {"token as a number", with("\"token\":\"tok\"", "\"token\":7")},
      {"token empty", with("\"token\":\"tok\"", "\"token\":\"\"")},
      {"token missing", with("\"token\":\"tok\",", "")},
      {"start_ms as a string", with("\"start_ms\":1", "\"start_ms\":\"1\"")},
      {"start_ms as a float", with("\"start_ms\":1", "\"start_ms\":1.5")},
      {"start_ms missing", with("\"start_ms\":1,", "")},
      {"deadline_ms past int64", with("\"deadline_ms\":2", "\"deadline_ms\":9223372036854775808")},
      {"deadline_ms as an exponent", with("\"deadline_ms\":2", "\"deadline_ms\":2e3")},
      {"deadline_ms as bool", with("\"deadline_ms\":2", "\"deadline_ms\":true")},
      {"deadline_ms missing", with("\"deadline_ms\":2,", "")},
      {"released as a number", with("\"released\":false", "\"released\":0")},
      {"released as a string", with("\"released\":false", "\"released\":\"false\"")},
      {"released missing", with(",\"released\":false", "")},
      {"an unknown field", with("\"released\":false", "\"released\":false,\"extend\":1")},
      {"a repeated field", with("\"token\":\"tok\"", "\"token\":\"tok\",\"token\":\"other\"")},
      {"a repeated field, same value",
       with("\"token\":\"tok\"", "\"token\":\"tok\",\"token\":\"tok\"")},
      {"a nested object", with("\"worker\":\"n1\"", "\"worker\":{\"name\":\"n1\"}")},
      {"a nested array", with("\"worker\":\"n1\"", "\"worker\":[\"n1\"]")},
      {"invalid UTF-8 in a string", with("\"n1\"", "\"n\xff\"")},
      {"a comment", with("{", "{/*c*/")},
      {"deep nesting", std::string(100000, '[') + std::string(100000, ']')},
      {"huge", "{\"worker\":\"" + std::string(100000, 'a') + "\"}"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(decode_lease(c.text).has_value()) << c.what << ": " << c.text.substr(0, 200);
  }
}

// ---- Acquire, hold, expire, release -------------------------------------------------

TEST_F(LeaseTest, AcquireOnAFreshKeyWritesGenerationZero) {
  Leases a = make("n1", "tokA");
  Claim claim = ok(a.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(claim.generation, 0u);
  EXPECT_EQ(claim.deadline_ms, ms_of(clock_) + 30'000);
  auto row = row_at(store_, 0);
  ASSERT_TRUE(row.has_value());
  auto r = decode_lease(*row);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, record("n1", "tokA", ms_of(clock_), ms_of(clock_) + 30'000));
  EXPECT_EQ(store_.row_count(), 1u);
}

TEST_F(LeaseTest, AnotherTokenFindsItHeldNamingTheHolderAndDeadline) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  Claim mine = ok(a.acquire(kKey));
  clock_.advance(10s);
  Claim theirs = ok(b.acquire(kKey));
  EXPECT_EQ(theirs.outcome, Outcome::kHeld);
  EXPECT_EQ(theirs.holder, "n1");
  EXPECT_EQ(theirs.deadline_ms, mine.deadline_ms);
  EXPECT_EQ(store_.row_count(), 1u);  // a held key costs no write
}

TEST_F(LeaseTest, TheSameNameWithAnotherTokenIsAnotherHolder) {
  Leases a = make("n1", "tokA");
  Leases a2 = make("n1", "tokA2");
  ASSERT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kAcquired);
  EXPECT_EQ(ok(a2.acquire(kKey)).outcome, Outcome::kHeld);
}

TEST_F(LeaseTest, TheSameTokenReacquiresWithoutANewGeneration) {
  Leases a = make("n1", "tokA");
  Claim first = ok(a.acquire(kKey));
  clock_.advance(5s);
  Claim again = ok(a.acquire(kKey));
  EXPECT_EQ(again.outcome, Outcome::kAcquired);
  EXPECT_EQ(again.generation, first.generation);
  EXPECT_EQ(again.deadline_ms, first.deadline_ms);  // not extended
  EXPECT_EQ(store_.row_count(), 1u);
}

TEST_F(LeaseTest, AnExpiredLeaseIsTakenAtTheNextGeneration) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  Claim first = ok(a.acquire(kKey));
  // At the deadline exactly the claim is void (lease.h: "at or after it").
  clock_.advance(kDuration);
  Claim stolen = ok(b.acquire(kKey));
  EXPECT_EQ(stolen.outcome, Outcome::kAcquired);
  EXPECT_EQ(stolen.generation, 1u);
  EXPECT_EQ(stolen.deadline_ms, first.deadline_ms + 30'000);
}

TEST_F(LeaseTest, TheOriginalHolderFindsItHeldByTheThief) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  ASSERT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kAcquired);
  clock_.advance(31s);
  Claim stolen = ok(b.acquire(kKey));
  ASSERT_EQ(stolen.outcome, Outcome::kAcquired);
  // The slow worker comes back: its own record at generation 0 no longer decides.
  Claim back = ok(a.acquire(kKey));
  EXPECT_EQ(back.outcome, Outcome::kHeld);
  EXPECT_EQ(back.holder, "n2");
  EXPECT_EQ(back.deadline_ms, stolen.deadline_ms);
}

TEST_F(LeaseTest, AReleaseFreesTheKeyForTheNextAcquireAtGenerationPlusTwo) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  Claim claim = ok(a.acquire(kKey));
  ASSERT_TRUE(a.release(kKey, claim.generation).ok());
  auto rel = decode_lease(row_at(store_, claim.generation + 1).value_or(""));
  ASSERT_TRUE(rel.has_value());
  EXPECT_TRUE(rel->released);
  EXPECT_EQ(rel->token, "tokA");

  LeaseProbe p = ok(b.probe(kKey));
  EXPECT_EQ(p.next, 2u);
  ASSERT_TRUE(p.top.has_value());
  EXPECT_TRUE(p.top->released);

  Claim next = ok(b.acquire(kKey));  // well before the old deadline
  EXPECT_EQ(next.outcome, Outcome::kAcquired);
  EXPECT_EQ(next.generation, claim.generation + 2);
}

TEST_F(LeaseTest, TheReleasingWorkerCanAlsoTakeItBack) {
  Leases a = make("n1", "tokA");
  Claim claim = ok(a.acquire(kKey));
  ASSERT_TRUE(a.release(kKey, claim.generation).ok());
  Claim again = ok(a.acquire(kKey));
  EXPECT_EQ(again.outcome, Outcome::kAcquired);
  EXPECT_EQ(again.generation, 2u);
}

TEST_F(LeaseTest, AReleaseThatLosesItsSlotIsNotAnError) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  Claim claim = ok(a.acquire(kKey));
  clock_.advance(31s);
  ASSERT_EQ(ok(b.acquire(kKey)).generation, 1u);
  EXPECT_TRUE(a.release(kKey, claim.generation).ok());
  // The thief's claim stands.
  Leases c = make("n3", "tokC");
  Claim later = ok(c.acquire(kKey));
  EXPECT_EQ(later.outcome, Outcome::kHeld);
  EXPECT_EQ(later.holder, "n2");
}

TEST_F(LeaseTest, AReleaseOfTheLastGenerationIsNotAnError) {
  Leases a = make("n1", "tokA");
  EXPECT_TRUE(a.release(kKey, kMaxGenerations - 1).ok());
  EXPECT_TRUE(a.release(kKey, kMaxGenerations + 5).ok());
  EXPECT_TRUE(a.release(kKey, UINT_MAX).ok());
  EXPECT_EQ(store_.row_count(), 0u);
}

TEST_F(LeaseTest, ExhaustedGenerationsAreLockFree) {
  for (unsigned g = 0; g < kMaxGenerations; ++g) {
    plant(store_, g, encode_lease(record("old", "tokOld", 0, 1)));  // long expired
  }
  Leases a = make("n1", "tokA");
  LeaseProbe p = ok(a.probe(kKey));
  EXPECT_EQ(p.next, kMaxGenerations);
  Claim claim = ok(a.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kLockFree);
  EXPECT_EQ(store_.row_count(), kMaxGenerations);
  EXPECT_STREQ(lease_outcome_name(claim.outcome), "lock-free");
}

TEST_F(LeaseTest, ALiveClaimInTheLastGenerationIsStillHonoured) {
  for (unsigned g = 0; g + 1 < kMaxGenerations; ++g) {
    plant(store_, g, encode_lease(record("old", "tokOld", 0, 1)));
  }
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  Claim last = ok(a.acquire(kKey));
  EXPECT_EQ(last.outcome, Outcome::kAcquired);
  EXPECT_EQ(last.generation, kMaxGenerations - 1);
  EXPECT_EQ(ok(b.acquire(kKey)).outcome, Outcome::kHeld);
  EXPECT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kAcquired);
  clock_.advance(31s);
  EXPECT_EQ(ok(b.acquire(kKey)).outcome, Outcome::kLockFree);
}

// ---- Extension -------------------------------------------------------------------------

TEST_F(LeaseTest, ExtendingWritesALaterDeadlineSoALongStepIsNotTaken) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  Claim first = ok(a.acquire(kKey));
  ASSERT_EQ(first.outcome, Outcome::kAcquired);
  clock_.advance(20s);
  Claim renewed = ok(a.extend(kKey));
  EXPECT_EQ(renewed.outcome, Outcome::kAcquired);
  EXPECT_EQ(renewed.generation, 1u);
  EXPECT_EQ(renewed.deadline_ms, ms_of(clock_) + 30'000);
  EXPECT_EQ(*row_at(store_, 1), encode_lease(record("n1", "tokA", ms_of(clock_),
                                                    ms_of(clock_) + 30'000)));
  // Past the first deadline, the key is still held: the extension's deadline is in force.
  clock_.advance(20s);
  Claim other = ok(b.acquire(kKey));
  EXPECT_EQ(other.outcome, Outcome::kHeld);
  EXPECT_EQ(other.holder, "n1");
  // A holder that stops extending (it died) loses the key at the last deadline.
  clock_.advance(11s);
  EXPECT_EQ(ok(b.acquire(kKey)).outcome, Outcome::kAcquired);
}

TEST_F(LeaseTest, ExtendingAClaimTakenAfterItExpiredSaysHeld) {
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB");
  ASSERT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kAcquired);
  clock_.advance(31s);
  ASSERT_EQ(ok(b.acquire(kKey)).outcome, Outcome::kAcquired);
  Claim late = ok(a.extend(kKey));
  EXPECT_EQ(late.outcome, Outcome::kHeld);
  EXPECT_EQ(late.holder, "n2");
  EXPECT_EQ(store_.row_count(), 2u) << "nothing written over the new holder";
}

TEST_F(LeaseTest, ExtendingAnExpiredFreeClaimClaimsItAgain) {
  Leases a = make("n1", "tokA");
  ASSERT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kAcquired);
  clock_.advance(31s);
  Claim again = ok(a.extend(kKey));
  EXPECT_EQ(again.outcome, Outcome::kAcquired);
  EXPECT_EQ(again.generation, 1u);
}

TEST_F(LeaseTest, ProbingManyGenerationsReadsAFew) {
  for (unsigned n : {0u, 1u, 2u, 3u, 4u, 7u, 8u, 1000u, kMaxGenerations - 1, kMaxGenerations}) {
    store::MemoryStore fresh;
    for (unsigned g = 0; g < n; ++g) {
      plant(fresh, g, encode_lease(record("w" + std::to_string(g), "tok", 0, 1)));
    }
    HookStore hooked(fresh);
    int gets = 0;
    hooked.filter_get = [&](std::string_view, std::optional<std::string> row) {
      ++gets;
      return row;
    };
    Leases a = make("n1", "tokA", &hooked);
    LeaseProbe p = ok(a.probe(kKey));
    EXPECT_EQ(p.next, n);
    if (n > 0) {
      ASSERT_TRUE(p.top) << n;
      EXPECT_EQ(p.top->worker, "w" + std::to_string(n - 1));
    } else {
      EXPECT_FALSE(p.top);
    }
    EXPECT_LE(gets, 2 * 13 + 1) << n << " generations";
  }
}

// ---- Unparsable rows ----------------------------------------------------------------

TEST_F(LeaseTest, UnparsableRowsOccupyTheirGenerationAndProbingGoesPastThem) {
  const std::string live = encode_lease(record("n9", "tok9", 0, ms_of(clock_) + 60'000));
  std::string v2 = live;
  v2.replace(v2.find("\"version\":1"), 11, "\"version\":2");
  std::string wrong_types = live;
  wrong_types.replace(wrong_types.find("\"worker\":\"n9\""), 13, "\"worker\":9");
  plant(store_, 0, std::string("\x01\x02garbage\xff", 10));
  plant(store_, 1, v2);
  plant(store_, 2, wrong_types);
  plant(store_, 3, live);
  Leases a = make("n1", "tokA");
  LeaseProbe p = ok(a.probe(kKey));
  EXPECT_EQ(p.next, 4u);
  ASSERT_TRUE(p.top.has_value());
  EXPECT_FALSE(p.top_unparsable);
  Claim claim = ok(a.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kHeld);
  EXPECT_EQ(claim.holder, "n9");
}

TEST_F(LeaseTest, AnUnparsableTopIsFreeAndAcquireWritesTheNextGeneration) {
  plant(store_, 0, encode_lease(record("n9", "tok9", 0, ms_of(clock_) + 60'000)));
  // A newer build's record on top: it has no deadline this build can read, so waiting
  // for it would never end.
  plant(store_, 1, R"({"version":2,"worker":"n9","token":"tok9","lease":{"until":"soon"}})");
  Leases a = make("n1", "tokA");
  LeaseProbe p = ok(a.probe(kKey));
  EXPECT_EQ(p.next, 2u);
  EXPECT_FALSE(p.top.has_value());
  EXPECT_TRUE(p.top_unparsable);
  Claim claim = ok(a.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(claim.generation, 2u);
}

TEST_F(LeaseTest, AFreshKeyProbesEmpty) {
  Leases a = make("n1", "tokA");
  LeaseProbe p = ok(a.probe(kKey));
  EXPECT_EQ(p.next, 0u);
  EXPECT_FALSE(p.top.has_value());
  EXPECT_FALSE(p.top_unparsable);
}

// ---- Races: the read-back decides ---------------------------------------------------

TEST_F(LeaseTest, ALoserWhosePutLandsAfterTheWinnerIsToldItIsHeld) {
  HookStore hooked(store_);
  Leases a = make("n1", "tokA", &hooked);
  Leases b = make("n2", "tokB");
  Claim b_claim;
  // a has probed and seen nothing; b's whole acquire lands before a's put does.
  hooked.before_put = [&] { b_claim = ok(b.acquire(kKey)); };
  Claim a_claim = ok(a.acquire(kKey));
  EXPECT_EQ(b_claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(b_claim.generation, 0u);
  EXPECT_EQ(a_claim.outcome, Outcome::kHeld);
  EXPECT_EQ(a_claim.holder, "n2");
  EXPECT_EQ(a_claim.deadline_ms, b_claim.deadline_ms);
  EXPECT_EQ(store_.row_count(), 1u);
}

TEST_F(LeaseTest, OnAnOverwritingStoreTheWorkerNotReadBackIsToldItIsHeld) {
  OverwritingStore shared;
  HookStore a_view(shared);
  HookStore b_view(shared);
  Leases a = make("n1", "tokA", &a_view);
  Leases b = make("n2", "tokB", &b_view);
  // b probed before a wrote (its first read is stale: empty), then writes after a and
  // overwrites a's record, and both put_rows say "created". Order:
  //   b probes, a probes, a puts, b puts, b reads back, a reads back.
  bool b_stale = true;
  b_view.filter_get = [&](std::string_view, std::optional<std::string> row) {
    return std::exchange(b_stale, false) ? std::nullopt : row;
  };
  Claim b_claim;
  a_view.after_put = [&] { b_claim = ok(b.acquire(kKey)); };
  Claim a_claim = ok(a.acquire(kKey));
  EXPECT_EQ(b_claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(b_claim.generation, 0u);
  // a's put_row said created == true, and a still knows it lost.
  EXPECT_EQ(a_claim.outcome, Outcome::kHeld);
  EXPECT_EQ(a_claim.holder, "n2");
  EXPECT_EQ(a_view.puts, 1);
}

TEST_F(LeaseTest, LosingTheSlotToAReleaseMovesOnToTheNextGeneration) {
  HookStore hooked(store_);
  Leases a = make("n1", "tokA");
  Leases b = make("n2", "tokB", &hooked);
  Claim first = ok(a.acquire(kKey));
  clock_.advance(31s);
  // b sees generation 0 expired and goes for 1; a's release lands there first.
  hooked.before_put = [&] { ASSERT_TRUE(a.release(kKey, first.generation).ok()); };
  Claim claim = ok(b.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(claim.generation, 2u);
}

TEST_F(LeaseTest, AReadBackOfNothingRetriesAtTheNextGeneration) {
  HookStore hooked(store_);
  hooked.black_hole.insert(lease_address(kKey, 0));  // the write to 0 is lost
  Leases a = make("n1", "tokA", &hooked);
  Claim claim = ok(a.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(claim.generation, 1u);
  EXPECT_EQ(hooked.puts, 2);
}

TEST_F(LeaseTest, AnUnparsableReadBackRetriesAtTheNextGeneration) {
  HookStore hooked(store_);
  // A probe that sees nothing, then generation 0 reads back as garbage.
  hooked.filter_get = [&](std::string_view address, std::optional<std::string> row) {
    if (address == lease_address(kKey, 0) && row) return std::optional<std::string>("\xff");
    return row;
  };
  Leases a = make("n1", "tokA", &hooked);
  Claim claim = ok(a.acquire(kKey));
  EXPECT_EQ(claim.outcome, Outcome::kAcquired);
  EXPECT_EQ(claim.generation, 1u);
}

TEST_F(LeaseTest, AStoreThatNeverReadsBackEndsLockFree) {
  HookStore hooked(store_);
  for (unsigned g = 0; g < kMaxGenerations; ++g) hooked.black_hole.insert(lease_address(kKey, g));
  Leases a = make("n1", "tokA", &hooked);
  EXPECT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kLockFree);
  EXPECT_EQ(hooked.puts, static_cast<int>(kMaxClaimWrites)) << "not every generation";
}

TEST_F(LeaseTest, OnlyAFailingStoreFailsAcquire) {
  FailingStore down;
  Leases a = make("n1", "tokA", &down);
  auto claim = a.acquire(kKey);
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.error().code(), Errc::kIo);
  EXPECT_NE(claim.error().message().find("unreachable"), std::string::npos);
  EXPECT_FALSE(a.probe(kKey).ok());
  EXPECT_FALSE(a.release(kKey, 0).ok());
}

TEST_F(LeaseTest, EightWorkersAtOnceLeaveExactlyOneHolder) {
  constexpr int kWorkers = 8;
  std::vector<Claim> claims(kWorkers);
  std::latch start(kWorkers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkers; ++i) {
    threads.emplace_back([&, i] {
      Leases mine(store_, fmt::format("n{}", i), Leases::new_token(), clock_, kDuration);
      start.arrive_and_wait();
      auto c = mine.acquire(kKey);
      if (c.ok()) claims[i] = *c;
    });
  }
  for (auto& t : threads) t.join();
  int acquired = 0;
  std::string holder;
  for (int i = 0; i < kWorkers; ++i) {
    if (claims[i].outcome == Outcome::kAcquired) {
      ++acquired;
      holder = fmt::format("n{}", i);
    }
  }
  ASSERT_EQ(acquired, 1);
  for (const Claim& c : claims) {
    if (c.outcome == Outcome::kHeld) EXPECT_EQ(c.holder, holder);
    EXPECT_NE(c.outcome, Outcome::kLockFree);
  }
}

// ---- The tiers: leases only through the shared store (spec 05 §7) ------------------

TEST_F(LeaseTest, ALeaseThroughTheSharedTierIsSeenByAnotherMachine) {
  auto shared = std::make_unique<store::MemoryStore>();
  store::MemoryStore* shared_raw = shared.get();
  // Two machines: each its own local tier, both over one shared tier. The second
  // TieredStore's shared tier forwards to the first machine's, as a bucket would.
  store::TieredStore one(std::make_unique<store::MemoryStore>(), std::move(shared));
  store::TieredStore two(std::make_unique<store::MemoryStore>(),
                         std::make_unique<HookStore>(*shared_raw));
  Leases a = make("n1", "tokA", &one.shared());
  Leases b = make("n2", "tokB", &two.shared());
  ASSERT_EQ(ok(a.acquire(kKey)).outcome, Outcome::kAcquired);
  Claim seen = ok(b.acquire(kKey));
  EXPECT_EQ(seen.outcome, Outcome::kHeld);
  EXPECT_EQ(seen.holder, "n1");
  EXPECT_EQ(static_cast<store::MemoryStore&>(one.local()).row_count(), 0u);

  // Passing the tiered store itself would be correct too, because TieredStore routes
  // every row operation to its shared tier (spec 05 §7); shared() is passed so that
  // the rule is visible at the call and survives a tiering that caches rows.
  Leases c = make("n3", "tokC", &two);
  EXPECT_EQ(ok(c.acquire(kKey)).outcome, Outcome::kHeld);
  // Whereas a lease kept in one machine's local tier is the bug: the other machine
  // never sees it and takes the key as well.
  Leases local_a = make("n1", "tokA", &one.local());
  Leases local_b = make("n2", "tokB", &two.local());
  const std::string other_key = "00aa";
  ASSERT_EQ(ok(local_a.acquire(other_key)).outcome, Outcome::kAcquired);
  EXPECT_EQ(ok(local_b.acquire(other_key)).outcome, Outcome::kAcquired);
}

// ---- Tokens ---------------------------------------------------------------------------

TEST(LeaseToken, Is32LowerCaseHexDigitsAndDiffersEveryCall) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string t = Leases::new_token();
    ASSERT_EQ(t.size(), 32u) << t;
    for (char c : t) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(LeaseOutcome, HasAName) {
  EXPECT_STREQ(lease_outcome_name(Outcome::kAcquired), "acquired");
  EXPECT_STREQ(lease_outcome_name(Outcome::kHeld), "held");
  EXPECT_STREQ(lease_outcome_name(Outcome::kLockFree), "lock-free");
}

}  // namespace
}  // namespace berth::pipeline
