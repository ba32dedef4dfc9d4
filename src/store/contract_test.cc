// The ObjectStore contract (object_store.h), run against every backend.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/file_store.h"
#include "store/memory_store.h"
#include "store/s3_store.h"
#include "store/testing.h"
#include "store/tiered_store.h"
#include "util/files.h"

namespace berth::store {
namespace {

struct Backend {
  const char* name;
  std::function<std::unique_ptr<ObjectStore>(const std::string& dir)> make;
  // Why this backend cannot run here (a live server not started), or nullptr.
  std::function<const char*()> skip_reason = [] { return nullptr; };
};

}  // namespace

// S3 backends, defined in s3_store_test.cc (one test binary): an in-memory fake server
// in each of its three conditional-write behaviours, and the live Swift and s3rver of
// shared/services when BERTH_TEST_S3_SWIFT / BERTH_TEST_S3RVER are set.
namespace testing {
std::unique_ptr<ObjectStore> open_s3_for_contract(const std::string& which);
const char* s3_skip_reason(const std::string& which);
}  // namespace testing

namespace {

Backend s3_backend(const char* name, const char* which) {
  return Backend{name, [which](const std::string&) { return testing::open_s3_for_contract(which); },
                 [which] { return testing::s3_skip_reason(which); }};
}

// Whether the backend's server decides the one winner of a row (every backend but an
// S3 server that does not honour If-None-Match).
bool enforces_write_once(ObjectStore* s) {
  auto* s3 = dynamic_cast<S3Store*>(s);
  return s3 == nullptr || s3->conditional_writes() == ConditionalWrites::kHonoured;
}

std::unique_ptr<ObjectStore> open_file(const std::string& dir, FileStore::Options o = {}) {
  auto s = FileStore::open(dir, o);
  return s.ok() ? std::move(*s) : nullptr;
}

const Backend kBackends[] = {
    {"memory", [](const std::string&) { return std::make_unique<MemoryStore>(); }},
    {"file", [](const std::string& d) { return open_file(d + "/store"); }},
    {"file_without_links",
     [](const std::string& d) {
       FileStore::Options o;
       o.use_hard_links = false;
       o.fsync_objects = false;
       return open_file(d + "/store", o);
     }},
    {"tiered_memory",
     [](const std::string&) -> std::unique_ptr<ObjectStore> {
       return std::make_unique<TieredStore>(std::make_unique<MemoryStore>(),
                                            std::make_unique<MemoryStore>());
     }},
    {"tiered_file",
     [](const std::string& d) -> std::unique_ptr<ObjectStore> {
       return std::make_unique<TieredStore>(open_file(d + "/local"), open_file(d + "/shared"));
     }},
    s3_backend("s3_fake_honoured", "fake_honoured"),
    s3_backend("s3_fake_refused", "fake_refused"),
    s3_backend("s3_fake_ignored", "fake_ignored"),
    s3_backend("s3_swift", "swift"),
    s3_backend("s3rver", "s3rver"),
};

class Contract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (const char* why = GetParam().skip_reason()) GTEST_SKIP() << why;
    store_ = GetParam().make(dir_.path());
    ASSERT_NE(store_, nullptr);
  }
  testing::TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_P(Contract, PutThenGetReturnsVerifiedBytes) {
  auto name = store_->put_object("hello");
  ASSERT_TRUE(name.ok()) << name.error().message();
  EXPECT_EQ(*name, object_name_of("hello"));
  EXPECT_TRUE(*store_->has_object(*name));
  auto r = store_->get_object(*name);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kPresent);
  EXPECT_EQ(r->bytes, "hello");
  EXPECT_TRUE(r->problem.empty());
}

TEST_P(Contract, EmptyObjectIsAnObject) {
  auto name = store_->put_object("");
  ASSERT_TRUE(name.ok());
  auto r = store_->get_object(*name);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->present());
  EXPECT_EQ(r->bytes, "");
}

TEST_P(Contract, MissingObjectIsAbsentNotAnError) {
  std::string name = object_name_of("never stored");
  EXPECT_FALSE(*store_->has_object(name));
  auto r = store_->get_object(name);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kAbsent);
  EXPECT_TRUE(r->problem.empty());
}

TEST_P(Contract, ManyObjectsAreAskedAboutAtOnce) {
  // Present ones in several shards, absent ones beside them, a bad name: each answered
  // as has_object() would, a bad name as absent.
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    auto name = store_->put_object("object " + std::to_string(i));
    ASSERT_TRUE(name.ok());
    names.push_back(*name);
    names.push_back(object_name_of("never stored " + std::to_string(i)));
  }
  names.push_back("../etc/passwd");
  std::vector<char> present(names.size(), 7);
  store_->has_objects(names, present);
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    EXPECT_EQ(present[i], i % 2 == 0 ? 1 : 0) << names[i];
  }
  EXPECT_EQ(present.back(), 0);
}

TEST_P(Contract, BadNameIsInvalidInput) {
  auto r = store_->get_object("sha256:nope");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  EXPECT_FALSE(store_->has_object("../etc/passwd").ok());
}

TEST_P(Contract, PutTwiceIsWriteOnceAndReturnsTheSameName) {
  auto a = store_->put_object("x");
  auto b = store_->put_object("x");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST_P(Contract, PutFileStreamsAndNamesTheContents) {
  std::string src = dir_ / "input";
  std::string data(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
  ASSERT_TRUE(files::write_file_atomic(src, data).ok());
  auto name = store_->put_object_file(src);
  ASSERT_TRUE(name.ok()) << name.error().message();
  EXPECT_EQ(*name, object_name_of(data));
  std::string dest = dir_ / "out";
  auto r = store_->get_object_to_file(*name, dest);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->present());
  EXPECT_EQ(*files::read_file(dest), data);
}

TEST_P(Contract, PutFileOfMissingFileNamesIt) {
  auto r = store_->put_object_file(dir_ / "nope");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find("nope"), std::string::npos);
}

TEST_P(Contract, GetToFileOfAbsentObjectLeavesDestinationAlone) {
  std::string dest = dir_ / "keep";
  ASSERT_TRUE(files::write_file_atomic(dest, "old").ok());
  auto r = store_->get_object_to_file(object_name_of("absent"), dest);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kAbsent);
  EXPECT_EQ(*files::read_file(dest), "old");
}

TEST_P(Contract, MaterializeReplacesTheDestinationAndCanRepeat) {
  auto name = store_->put_object("result");
  ASSERT_TRUE(name.ok());
  std::string dest = dir_ / "result.txt";
  ASSERT_TRUE(files::write_file_atomic(dest, "stale").ok());
  for (int i = 0; i < 2; ++i) {  // the second time, dest may already be the same inode
    auto r = store_->materialize(*name, dest);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(r->present());
    EXPECT_EQ(*files::read_file(dest), "result");
  }
  // No temporary link or copy is left beside the result.
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp", 0), 0u) << e.path();
  }
}

TEST_P(Contract, RowsAreWriteOnceAndTheLoserSeesTheWinner) {
  std::string addr = row_address("steps", "k1");
  auto first = store_->put_row(addr, "mine");
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_TRUE(first->created);
  auto second = store_->put_row(addr, "theirs");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->existing, "mine");
  auto got = store_->get_row(addr);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "mine");
}

TEST_P(Contract, MissingRowIsNulloptAndBadAddressIsRefused) {
  auto got = store_->get_row(row_address("steps", "none"));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  auto bad = store_->put_row("steps/k", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), Errc::kInvalidInput);
  EXPECT_FALSE(
      store_->put_row(row_address("steps", "big"), std::string(kMaxRowBytes + 1, 'x')).ok());
}

TEST_P(Contract, RowFormatVersionsNeverCompete) {
  // A v1 row must not occupy the slot a v2 row needs, or no v2 row could ever be
  // published for that key (spec 05 §3).
  ASSERT_TRUE(store_->put_row(row_address("steps", "k", 1), "v1 row")->created);
  auto v2 = store_->put_row(row_address("steps", "k", 2), "v2 row");
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE(v2->created);
}

TEST_P(Contract, ListRowsUnderAPrefixIsSorted) {
  for (const char* key : {"b", "a", "c/1", "c/0"}) {
    ASSERT_TRUE(store_->put_row(row_address("leases", key), key).ok());
  }
  ASSERT_TRUE(store_->put_row(row_address("steps", "z"), "z").ok());
  auto all = store_->list_rows("rows/v1/leases/");
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(*all, (std::vector<std::string>{"rows/v1/leases/a", "rows/v1/leases/b",
                                            "rows/v1/leases/c/0", "rows/v1/leases/c/1"}));
  auto c = store_->list_rows("rows/v1/leases/c");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->size(), 2u);
  auto none = store_->list_rows("rows/v9");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(store_->list_rows("objects").ok());
}

TEST_P(Contract, ConcurrentThreadsPublishOneRow) {
  std::string addr = row_address("steps", "race");
  constexpr int kThreads = 8;
  std::vector<int> created(kThreads, 0);
  std::vector<std::string> seen(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      auto r = store_->put_row(addr, "writer " + std::to_string(i));
      if (!r.ok()) {
        errors[i] = r.error().message();
        return;
      }
      created[i] = r->created ? 1 : 0;
      seen[i] = r->created ? "writer " + std::to_string(i) : r->existing;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  int winners = 0;
  for (int c : created) winners += c;
  if (enforces_write_once(store_.get())) {
    EXPECT_EQ(winners, 1);
    for (const auto& s : seen) EXPECT_EQ(s, seen[0]);  // everyone agrees on the winner
    return;
  }
  // A server that ignores or refuses If-None-Match cannot name one winner (spec 05 §8).
  // What still holds: the store says so; the last writer is told it won, so there is
  // at least one winner; the row that stays is a winner's; and a loser is handed some
  // writer's bytes, never its own bytes as someone else's or a torn row.
  EXPECT_FALSE(store_->notices().empty());
  EXPECT_GE(winners, 1);
  auto final_row = store_->get_row(addr);
  ASSERT_TRUE(final_row.ok() && final_row->has_value());
  bool final_is_a_winner = false;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(seen[i].rfind("writer ", 0), 0u) << seen[i];
    if (created[i] == 1 && **final_row == seen[i]) final_is_a_winner = true;
    if (created[i] == 0) EXPECT_NE(seen[i], "writer " + std::to_string(i));
  }
  EXPECT_TRUE(final_is_a_winner) << **final_row;
}

INSTANTIATE_TEST_SUITE_P(Backends, Contract, ::testing::ValuesIn(kBackends),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace berth::store
