#include "pipeline/index.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <limits>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "launch/status.h"

namespace berth::pipeline {
namespace {

namespace fs = std::filesystem;

class IndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "berth-index-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    db_ = (dir_ / "index.sqlite").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Index> open_ok(const IndexOptions& options = {}) {
    auto index = Index::open(db_, options);
    EXPECT_TRUE(index.ok()) << (index.ok() ? "" : index.error().message());
    return index.ok() ? std::move(index).value() : nullptr;
  }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    return p;
  }

  // Runs raw SQL on the index file from outside the Index, as another program would.
  void raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  fs::path dir_;
  std::string db_;
};

FileStamp stamp_of(const std::string& path) {
  auto st = FileStamp::of(path);
  EXPECT_TRUE(st.ok());
  return st.ok() ? *st : FileStamp{};
}

TEST(FileStamp, MissingFileIsNotFound) {
  auto st = FileStamp::of("/nonexistent/berth/index-test");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), Errc::kNotFound);
  EXPECT_NE(st.error().message().find("/nonexistent/berth/index-test"), std::string::npos);
}

TEST_F(IndexTest, NewFileHasSchemaAndNoRebuildReason) {
  auto index = open_ok();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->rebuilt_reason(), "");
  EXPECT_TRUE(fs::exists(db_));
  EXPECT_EQ(index->step_row("k"), std::nullopt);
  EXPECT_EQ(index->write_errors(), 0u);
}

TEST_F(IndexTest, FileHashRoundTripsAcrossReopen) {
  std::string f = write("a.txt", "hello\n");
  FileStamp st = stamp_of(f);
  {
    auto index = open_ok();
    EXPECT_EQ(index->file_hash(f, st), std::nullopt);
    index->remember_file(f, st, "sha256:abc");
    EXPECT_EQ(index->file_hash(f, st), "sha256:abc");
    index->remember_file(f, st, "sha256:def");  // replaces
    EXPECT_EQ(index->file_hash(f, st), "sha256:def");
  }
  auto index = open_ok();
  EXPECT_EQ(index->rebuilt_reason(), "");
  EXPECT_EQ(index->file_hash(f, st), "sha256:def");
  EXPECT_EQ(index->file_hash(f + ".other", st), std::nullopt);
}

TEST_F(IndexTest, StepRowRoundTripsBinaryBytes) {
  std::string row = std::string("row\0with", 8) + "\xff bytes";
  {
    auto index = open_ok();
    index->remember_step("key1", row);
    index->remember_step("key2", "");
    EXPECT_EQ(index->step_row("key1"), row);
  }
  auto index = open_ok();
  EXPECT_EQ(index->step_row("key1"), row);
  EXPECT_EQ(index->step_row("key2"), "");
  EXPECT_EQ(index->step_row("key3"), std::nullopt);
}

TEST_F(IndexTest, SettledRecordRoundTripsIsReplacedAndForgotten) {
  std::string big(3 << 20, 'x');  // megabytes: a 10,000-step record is several
  big[17] = '\0';
  {
    auto index = open_ok();
    EXPECT_EQ(index->settled("/p/pipeline.toml"), std::nullopt);
    index->remember_settled("/p/pipeline.toml", "first");
    index->remember_settled("/p/pipeline.toml", big);  // replaces
    index->remember_settled("/q/pipeline.toml", "");
  }
  auto index = open_ok();
  EXPECT_EQ(index->settled("/p/pipeline.toml"), big);
  index->forget_settled("/p/pipeline.toml");
  index->forget_settled("/never/remembered.toml");  // nothing to forget: not an error
  EXPECT_EQ(index->settled("/p/pipeline.toml"), std::nullopt);
  EXPECT_EQ(index->settled("/q/pipeline.toml"), "");
  EXPECT_EQ(index->write_errors(), 0u);
}

TEST_F(IndexTest, AnyStampFieldChangedMisses) {
  auto index = open_ok();
  FileStamp base{1, 2, 3, 4, 5};
  index->remember_file("p", base, "h");
  ASSERT_EQ(index->file_hash("p", base), "h");
  struct Case {
    const char* field;
    std::function<void(FileStamp&)> change;
  };
  const Case cases[] = {
      {"dev", [](FileStamp& s) { s.dev = 9; }},
      {"ino", [](FileStamp& s) { s.ino = 9; }},
      {"size", [](FileStamp& s) { s.size = 9; }},
      {"mtime_ns", [](FileStamp& s) { s.mtime_ns = 9; }},
      {"ctime_ns", [](FileStamp& s) { s.ctime_ns = 9; }},
  };
  for (const Case& c : cases) {
    FileStamp s = base;
    c.change(s);
    EXPECT_EQ(index->file_hash("p", s), std::nullopt) << c.field;
  }
}

TEST(StampIsRacy, WithinTheWindowOfItsVerificationOrAfterIt) {
  const int64_t t = 1'700'000'000'000'000'000;
  FileStamp st{1, 2, 3, t, t};
  EXPECT_TRUE(stamp_is_racy(st, t));                      // hashed in the tick it changed
  EXPECT_TRUE(stamp_is_racy(st, t + kRacyWindowNs - 1));  // a coarse filesystem's tick
  EXPECT_FALSE(stamp_is_racy(st, t + kRacyWindowNs));
  EXPECT_TRUE(stamp_is_racy(st, t - 1'000'000'000));  // a file server's clock ahead of ours
  // The later of mtime and ctime counts: an edit with its mtime put back is as recent
  // as its ctime.
  FileStamp restored{1, 2, 3, t - 10 * kRacyWindowNs, t};
  EXPECT_TRUE(stamp_is_racy(restored, t + 1));
  // No overflow at the ends.
  EXPECT_TRUE(stamp_is_racy(st, std::numeric_limits<int64_t>::min()));
  FileStamp ancient{1, 2, 3, std::numeric_limits<int64_t>::min(), 0};
  EXPECT_FALSE(stamp_is_racy(ancient, std::numeric_limits<int64_t>::max()));
}

TEST_F(IndexTest, ARacyHashIsNotAnsweredFromTheStampAlone) {
  // Hashed within the window of its last change: a write in the same timestamp tick
  // would leave the stamp as it is, so the stamp does not prove the bytes (index.h).
  auto index = open_ok();
  const int64_t t = 1'700'000'000'000'000'000;
  FileStamp st{1, 2, 3, t, t};
  index->remember_file("p", st, "h", t + 1'000'000);
  EXPECT_EQ(index->file_hash("p", st), std::nullopt);
  // Hashed again once the window has passed (the caller read the file): proof.
  index->remember_file("p", st, "h", t + kRacyWindowNs);
  EXPECT_EQ(index->file_hash("p", st), "h");
  // 0: a stamp its caller vouches for without a time (a result, spec 05 §5).
  index->remember_file("q", st, "r");
  EXPECT_EQ(index->file_hash("q", st), "r");
}

TEST_F(IndexTest, LargeDevAndInodeRoundTrip) {
  auto index = open_ok();
  FileStamp st{~0ull, (1ull << 63) + 7, 1, 2, 3};
  index->remember_file("p", st, "h");
  EXPECT_EQ(index->file_hash("p", st), "h");
}

TEST_F(IndexTest, TouchWithNewMtimeMisses) {
  std::string f = write("a.txt", "hello\n");
  FileStamp before = stamp_of(f);
  auto index = open_ok();
  index->remember_file(f, before, "h");
  struct timespec times[2] = {{0, UTIME_OMIT}, {before.mtime_ns / 1'000'000'000 + 10, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
  FileStamp after = stamp_of(f);
  EXPECT_NE(after.mtime_ns, before.mtime_ns);
  EXPECT_EQ(index->file_hash(f, after), std::nullopt);
}

TEST_F(IndexTest, RewriteWithSameMtimeButNewSizeMisses) {
  std::string f = write("a.txt", "hello\n");
  FileStamp before = stamp_of(f);
  auto index = open_ok();
  index->remember_file(f, before, "h");
  write("a.txt", "hello, longer\n");
  struct timespec times[2] = {{0, UTIME_OMIT},
                              {before.mtime_ns / 1'000'000'000, before.mtime_ns % 1'000'000'000}};
  ASSERT_EQ(utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
  FileStamp after = stamp_of(f);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_NE(after.size, before.size);
  EXPECT_EQ(index->file_hash(f, after), std::nullopt);
}

TEST_F(IndexTest, ChmodChangesCtimeAndMisses) {
  std::string f = write("a.txt", "hello\n");
  FileStamp before = stamp_of(f);
  auto index = open_ok();
  index->remember_file(f, before, "h");
  // The kernel's timestamp clock is coarse (a few ms): repeat until ctime moves.
  FileStamp after = before;
  mode_t mode = 0600;
  for (int i = 0; i < 200 && after.ctime_ns == before.ctime_ns; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    mode = mode == 0600 ? 0640 : 0600;
    ASSERT_EQ(chmod(f.c_str(), mode), 0);
    after = stamp_of(f);
  }
  ASSERT_NE(after.ctime_ns, before.ctime_ns);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_EQ(after.size, before.size);
  EXPECT_EQ(index->file_hash(f, after), std::nullopt);
}

TEST_F(IndexTest, GarbageFileIsRebuiltWithReason) {
  {
    auto index = open_ok();
    index->remember_step("k", "row");
  }
  write("index.sqlite", std::string(8192, 'x'));
  auto index = open_ok();
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->rebuilt_reason().find("not a readable database"), std::string::npos)
      << index->rebuilt_reason();
  EXPECT_EQ(index->step_row("k"), std::nullopt);
  index->remember_step("k", "row2");
  EXPECT_EQ(index->step_row("k"), "row2");
  EXPECT_EQ(index->write_errors(), 0u);
}

TEST_F(IndexTest, TruncatedHeaderIsRebuilt) {
  write("index.sqlite", "SQLite format 3");
  auto index = open_ok();
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->rebuilt_reason(), "");
  index->remember_step("k", "row");
  EXPECT_EQ(index->step_row("k"), "row");
}

TEST_F(IndexTest, SchemaVersionMismatchIsRebuilt) {
  {
    auto index = open_ok();
    index->remember_step("k", "row");
  }
  raw_sql("UPDATE meta SET value = '0' WHERE key = 'schema'");
  auto index = open_ok();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->rebuilt_reason(), "schema version 0, expected 3");
  EXPECT_EQ(index->step_row("k"), std::nullopt);
  // Rebuilt at the current version: the next open keeps it.
  index.reset();
  index = open_ok();
  EXPECT_EQ(index->rebuilt_reason(), "");
}

TEST_F(IndexTest, RightVersionWithWrongTablesIsRebuilt) {
  // The schema version matches, but a table lacks a column a statement needs: the
  // file is rebuilt, not run without for ever.
  { auto index = open_ok(); }
  raw_sql("DROP TABLE settled; CREATE TABLE settled(pipeline TEXT PRIMARY KEY, other BLOB)");
  auto index = open_ok();
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->rebuilt_reason().find("its tables do not match schema version"),
            std::string::npos)
      << index->rebuilt_reason();
  index->remember_settled("/p.toml", "r");
  EXPECT_NE(index->settled("/p.toml"), std::nullopt);
}

TEST_F(IndexTest, ForeignDatabaseWithoutMetaIsRebuilt) {
  raw_sql("CREATE TABLE other(x)");
  auto index = open_ok();
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->rebuilt_reason().find("no schema version"), std::string::npos)
      << index->rebuilt_reason();
}

TEST_F(IndexTest, MissingDirectoryIsAnIoError) {
  auto index = Index::open((dir_ / "no" / "such" / "index.sqlite").string());
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.error().code(), Errc::kIo);
  EXPECT_NE(index.error().message().find("no/such/index.sqlite"), std::string::npos);
}

TEST_F(IndexTest, WriteBlockedByAnotherWriterIsCountedNotFatal) {
  auto index = open_ok({.busy_timeout_ms = 20});
  index->remember_step("before", "1");
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  index->remember_step("blocked", "2");
  index->remember_file("f", FileStamp{}, "h");
  EXPECT_EQ(index->write_errors(), 2u);
  EXPECT_FALSE(index->begin().ok());
  EXPECT_EQ(index->step_row("before"), "1");  // WAL: reads go on under a writer
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  index->remember_step("after", "3");
  EXPECT_EQ(index->step_row("after"), "3");
  EXPECT_EQ(index->step_row("blocked"), std::nullopt);
  EXPECT_EQ(index->write_errors(), 2u);
}

TEST_F(IndexTest, BeginCommitNestAndCommitWithoutBeginFails) {
  auto index = open_ok();
  EXPECT_FALSE(index->commit().ok());
  ASSERT_TRUE(index->begin().ok());
  ASSERT_TRUE(index->begin().ok());
  index->remember_step("k", "v");
  ASSERT_TRUE(index->commit().ok());
  ASSERT_TRUE(index->commit().ok());
  index.reset();
  index = open_ok();
  EXPECT_EQ(index->step_row("k"), "v");
}

TEST_F(IndexTest, DestructorCommitsOpenTransaction) {
  {
    auto index = open_ok();
    ASSERT_TRUE(index->begin().ok());
    index->remember_step("k", "v");
  }
  auto index = open_ok();
  EXPECT_EQ(index->step_row("k"), "v");
}

// Rows written between begin() and commit() are one transaction, not one each (the
// difference between a run's 10^4 file hashes costing one fsync and 10^4): another
// connection sees none of them before the commit and all of them after.
TEST_F(IndexTest, TenThousandWritesBetweenBeginAndCommitAreOneTransaction) {
  auto index = open_ok();
  auto rows_seen_from_outside = [&] {
    sqlite3* other = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db_.c_str(), &other, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(other, "SELECT count(*) FROM files", -1, &q, nullptr), SQLITE_OK)
        << sqlite3_errmsg(other);
    int64_t n = -1;
    if (q != nullptr && sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(other);
    return n;
  };
  ASSERT_TRUE(index->begin().ok());
  for (int i = 0; i < 10000; ++i) {
    FileStamp st{1, static_cast<uint64_t>(i), i, i, i};
    index->remember_file("data/file-" + std::to_string(i), st, "sha256:" + std::to_string(i));
  }
  EXPECT_EQ(rows_seen_from_outside(), 0);
  ASSERT_TRUE(index->commit().ok());
  EXPECT_EQ(rows_seen_from_outside(), 10000);
  for (int i = 0; i < 10000; ++i) {
    FileStamp st{1, static_cast<uint64_t>(i), i, i, i};
    ASSERT_EQ(index->file_hash("data/file-" + std::to_string(i), st),
              "sha256:" + std::to_string(i));
  }
  EXPECT_EQ(index->write_errors(), 0u);
}

TEST_F(IndexTest, ThreadsShareOneIndex) {
  auto index = open_ok();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        std::string key = std::to_string(t) + "/" + std::to_string(i);
        index->remember_step(key, key);
        EXPECT_EQ(index->step_row(key), key);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(index->write_errors(), 0u);
}

// Two processes on one file: a child writes in batches while the parent writes and
// reads. Neither loses a row, and the file passes SQLite's integrity check.
TEST_F(IndexTest, TwoProcessesShareOneFile) {
  // Create the file first so that neither side has to.
  open_ok().reset();
  constexpr int kRows = 2000;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // No gtest in the child: report through the exit status only.
    auto opened = Index::open(db_);
    if (!opened.ok()) _exit(2);
    auto& index = *opened;
    for (int i = 0; i < kRows; ++i) {
      if (i % 100 == 0 && !index->begin().ok()) _exit(3);
      index->remember_step("child/" + std::to_string(i), std::to_string(i));
      if (i % 100 == 99 && !index->commit().ok()) _exit(4);
    }
    _exit(index->write_errors() == 0 ? 0 : 5);
  }
  auto index = open_ok();
  for (int i = 0; i < kRows; ++i) {
    index->remember_step("parent/" + std::to_string(i), std::to_string(i));
    // Whatever the child has written so far is either absent or whole.
    auto row = index->step_row("child/" + std::to_string(i / 2));
    if (row) {
      EXPECT_EQ(*row, std::to_string(i / 2));
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(launch::describe(launch::decode_wait_status(status)), "exited with status 0");
  EXPECT_EQ(index->write_errors(), 0u);
  index.reset();

  index = open_ok();
  EXPECT_EQ(index->rebuilt_reason(), "");
  for (int i = 0; i < kRows; ++i) {
    EXPECT_EQ(index->step_row("child/" + std::to_string(i)), std::to_string(i));
    EXPECT_EQ(index->step_row("parent/" + std::to_string(i)), std::to_string(i));
  }
  index.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

}  // namespace
}  // namespace berth::pipeline
