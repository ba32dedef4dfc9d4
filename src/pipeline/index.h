// Index: what this machine already knows, so that a no-op rerun stats instead of
// rehashing (spec 04 §7).
//
// The index is a local SQLite database under the cache directory with three maps: a
// file's path and stat stamp (and when it was hashed) -> the hash of its bytes, a step
// key -> the bytes of its
// row, and a pipeline -> the record its last settled run left (settled.h).
// It is a cache of facts the store can always re-derive, never a source of truth: a
// missing, corrupt or old-schema file is deleted and recreated by open(), and a write
// that fails (disk full, read-only, locked too long) is counted and otherwise ignored,
// so the index can make a run faster but never make it fail.
//
// One file per cache directory, and a cache directory per worker (spec 06 §5): SQLite's
// locking is not safe on network filesystems, so never point two machines at one file.
// Several processes on one machine may share a file (WAL mode; writers wait up to
// busy_timeout_ms for each other).
//
// Thread safety: every member function takes one mutex, so one Index may be shared by
// the executor's threads. begin()/commit() nest by depth and the transaction belongs to
// the Index, not to a thread: writes from every thread between the outermost begin() and
// its commit() share it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace berth::pipeline {

// The identity of one version of a file, as stat(2) reports it. A lookup hits only when
// every field matches: dev/ino catch a replaced file (rename over it, a retargeted
// symlink), size and mtime catch ordinary writes, and ctime catches an in-place edit
// that restored the old mtime (touch -d, rsync -t, a tool that preserves timestamps).
struct FileStamp {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  // stat(2) of `path`, following symlinks (the stamp is of the bytes a reader sees).
  // Fails with kNotFound when it does not exist, kIo for any other stat error.
  static Result<FileStamp> of(const std::string& path);
  // The same for `path` relative to the directory `dirfd` (fstatat(2)).
  static Result<FileStamp> at(int dirfd, const char* path);

  bool operator==(const FileStamp&) const = default;
};

// A stamp is *racy* when the file changed so shortly before its bytes were read that a
// later write could leave every field of the stamp as it was: file times come from a
// coarse clock (a few milliseconds on Linux; a second on some network and parallel
// filesystems, two on FAT), so two writes of the same size within one tick look alike.
// `verified_ns` is the wall clock read before the file was stamped and read; the stamp
// is racy when its mtime or ctime is within kRacyWindowNs of it (or after it). A racy
// stamp proves nothing on its own: the hash taken with it is used only after reading
// the file again (as git treats a "racily clean" entry). The window is two seconds: a
// filesystem's granularity, a tick of the kernel's coarse clock, and a little skew
// between this host's clock and a file server's.
inline constexpr int64_t kRacyWindowNs = 2'000'000'000;
bool stamp_is_racy(const FileStamp& stamp, int64_t verified_ns);

// The wall clock in nanoseconds since the epoch, as a verified_ns.
int64_t wall_ns(std::chrono::system_clock::time_point t);

// The schema version stored in the `meta` table. Bump it when a table changes: an index
// with another version is rebuilt, not migrated.
inline constexpr int kIndexSchemaVersion = 3;

struct IndexOptions {
  // How long a statement waits for another process's lock before giving up (a lookup
  // then misses; a write is counted in write_errors()).
  int busy_timeout_ms = 5000;
};

class Index {
 public:
  // Opens the index at `path`, creating the file and schema if missing. A file that is
  // not a readable SQLite database, lacks the `meta` table or has another schema version
  // is deleted (with its -wal and -shm) and recreated; rebuilt_reason() then says why.
  // The directory must exist. Fails with kIo when the file cannot be opened or created,
  // or is locked by another process for longer than busy_timeout_ms.
  static Result<std::unique_ptr<Index>> open(const std::string& path,
                                             const IndexOptions& options = {});

  // Commits an open transaction (best effort) and closes the database. If a statement
  // reported corruption while open, the files are deleted so the next open() starts
  // afresh.
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  const std::string& path() const { return path_; }
  // Empty when the existing file was used or there was none; otherwise why open() threw
  // the old file away ("not a database", "schema version 0, expected 1").
  const std::string& rebuilt_reason() const { return rebuilt_reason_; }

  // The hash remembered for `path` at exactly `stamp`, or nullopt (also on any read
  // error, and when the stamp was racy when the hash was taken: the caller reads the
  // file again). To remember a hash safely, read the clock (verified_ns), then stamp the
  // file, hash it, and remember only if a second stamp taken after hashing equals the
  // first.
  std::optional<std::string> file_hash(const std::string& path, const FileStamp& stamp);
  // Remembers `hash` for `path` at `stamp`, replacing what was known about `path`.
  // `verified_ns`: when the hash was taken (see stamp_is_racy()); 0 for a file whose
  // stamp the caller vouches for without it (a result, verified against its stored
  // object, which no write reaches without the store noticing: spec 05 §5). Never
  // fails: an error is counted in write_errors().
  void remember_file(const std::string& path, const FileStamp& stamp, const std::string& hash,
                     int64_t verified_ns = 0);

  // The row bytes remembered for step `key`, or nullopt (also on any read error).
  std::optional<std::string> step_row(const std::string& key);
  // Remembers `row` for `key`, replacing any earlier row. Never fails: an error is
  // counted in write_errors().
  void remember_step(const std::string& key, std::string_view row);

  // The settled record (settled.h) remembered for `pipeline` (its absolute path), or
  // nullopt (also on any read error).
  std::optional<std::string> settled(const std::string& pipeline);
  // Remembers `record` for `pipeline`, replacing any earlier one; forget_settled()
  // removes it. Never fail: an error is counted in write_errors().
  void remember_settled(const std::string& pipeline, std::string_view record);
  void forget_settled(const std::string& pipeline);

  // Batch the writes up to the matching commit() into one transaction, so that many
  // remember_* calls cost one commit. Calls nest; only the outermost pair touches the
  // database. begin() fails (kIo) when the write lock is not granted within
  // busy_timeout_ms; commit() fails (kIo) when the commit does, or when a write error
  // already rolled the transaction back (those writes are lost). Either failure leaves
  // the Index usable, and a caller should report it and go on: nothing depends on it.
  Result<void> begin();
  Result<void> commit();

  // How many remember_* calls (and failed commits) did not reach the database.
  size_t write_errors() const;

 private:
  enum Stmt {
    kFileGet,
    kFilePut,
    kStepGet,
    kStepPut,
    kSettledGet,
    kSettledPut,
    kSettledDelete,
    kBegin,
    kCommit,
    kStmtCount
  };

  Index(std::string path, sqlite3* db, std::string rebuilt_reason);
  Result<void> prepare_all();
  // Runs a write statement that is already bound; counts a failure.
  void run_write(sqlite3_stmt* stmt);
  // A one-key look-up returning one blob column, and a write of a key (?1) and, when
  // given, a blob (?2): the shapes of the steps and settled statements.
  std::optional<std::string> get_blob(Stmt which, std::string_view key);
  void put_blob(Stmt which, std::string_view key, std::optional<std::string_view> blob);
  // Records that an SQLite result code means the file is damaged.
  void note_result(int rc);

  std::string path_;
  sqlite3* db_ = nullptr;
  std::string rebuilt_reason_;
  sqlite3_stmt* stmts_[kStmtCount] = {};

  mutable std::mutex mu_;
  int txn_depth_ = 0;
  size_t write_errors_ = 0;
  bool corrupt_ = false;
};

}  // namespace berth::pipeline
