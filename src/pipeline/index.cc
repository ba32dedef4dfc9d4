#include "pipeline/index.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "util/shared_library.h"

namespace berth::pipeline {
namespace {

// libsqlite3, loaded when the first index is opened rather than linked: linked, it
// cost every berth process about 0.5 ms of start-up on the development VM (a hello
// world linked against it: 1.5 ms against 1.0), and only a run keeps an index. The
// functions the index calls, declared as sqlite3.h declares them.
struct LibSqlite {
  decltype(&::sqlite3_bind_blob) bind_blob = nullptr;
  decltype(&::sqlite3_bind_int64) bind_int64 = nullptr;
  decltype(&::sqlite3_bind_text) bind_text = nullptr;
  decltype(&::sqlite3_busy_timeout) busy_timeout = nullptr;
  decltype(&::sqlite3_clear_bindings) clear_bindings = nullptr;
  decltype(&::sqlite3_close_v2) close_v2 = nullptr;
  decltype(&::sqlite3_column_blob) column_blob = nullptr;
  decltype(&::sqlite3_column_bytes) column_bytes = nullptr;
  decltype(&::sqlite3_column_int64) column_int64 = nullptr;
  decltype(&::sqlite3_column_text) column_text = nullptr;
  decltype(&::sqlite3_errmsg) errmsg = nullptr;
  decltype(&::sqlite3_errstr) errstr = nullptr;
  decltype(&::sqlite3_exec) exec = nullptr;
  decltype(&::sqlite3_finalize) finalize = nullptr;
  decltype(&::sqlite3_get_autocommit) get_autocommit = nullptr;
  decltype(&::sqlite3_open_v2) open_v2 = nullptr;
  decltype(&::sqlite3_prepare_v2) prepare_v2 = nullptr;
  decltype(&::sqlite3_prepare_v3) prepare_v3 = nullptr;
  decltype(&::sqlite3_reset) reset = nullptr;
  decltype(&::sqlite3_step) step = nullptr;
  std::string error;  // why it is not usable; empty when it is
};

const LibSqlite& sqlite() {
  static const LibSqlite api = [] {
    LibSqlite l;
    SharedLibrary lib("libsqlite3.so.0", "libsqlite3-0");
    lib.bind(l.bind_blob, "sqlite3_bind_blob");
    lib.bind(l.bind_int64, "sqlite3_bind_int64");
    lib.bind(l.bind_text, "sqlite3_bind_text");
    lib.bind(l.busy_timeout, "sqlite3_busy_timeout");
    lib.bind(l.clear_bindings, "sqlite3_clear_bindings");
    lib.bind(l.close_v2, "sqlite3_close_v2");
    lib.bind(l.column_blob, "sqlite3_column_blob");
    lib.bind(l.column_bytes, "sqlite3_column_bytes");
    lib.bind(l.column_int64, "sqlite3_column_int64");
    lib.bind(l.column_text, "sqlite3_column_text");
    lib.bind(l.errmsg, "sqlite3_errmsg");
    lib.bind(l.errstr, "sqlite3_errstr");
    lib.bind(l.exec, "sqlite3_exec");
    lib.bind(l.finalize, "sqlite3_finalize");
    lib.bind(l.get_autocommit, "sqlite3_get_autocommit");
    lib.bind(l.open_v2, "sqlite3_open_v2");
    lib.bind(l.prepare_v2, "sqlite3_prepare_v2");
    lib.bind(l.prepare_v3, "sqlite3_prepare_v3");
    lib.bind(l.reset, "sqlite3_reset");
    lib.bind(l.step, "sqlite3_step");
    l.error = lib.error();
    return l;
  }();
  return api;
}

constexpr const char* kSchema = R"(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE files(path TEXT PRIMARY KEY, dev INTEGER NOT NULL, ino INTEGER NOT NULL,
                   size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                   ctime_ns INTEGER NOT NULL, hash TEXT NOT NULL,
                   verified_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE steps(key TEXT PRIMARY KEY, row BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE settled(pipeline TEXT PRIMARY KEY, record BLOB NOT NULL);
)";

// Indexed by Index::Stmt.
constexpr const char* kStatements[] = {
    "SELECT dev, ino, size, mtime_ns, ctime_ns, hash, verified_ns FROM files WHERE path = ?1",
    "INSERT OR REPLACE INTO files VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    "SELECT row FROM steps WHERE key = ?1",
    "INSERT OR REPLACE INTO steps VALUES (?1, ?2)",
    "SELECT record FROM settled WHERE pipeline = ?1",
    "INSERT OR REPLACE INTO settled VALUES (?1, ?2)",
    "DELETE FROM settled WHERE pipeline = ?1",
    // IMMEDIATE: take the write lock now, while the busy handler can still wait for it.
    // A deferred transaction that reads first and upgrades later can get SQLITE_BUSY
    // without waiting, when another process committed in between.
    "BEGIN IMMEDIATE",
    "COMMIT",
};

bool is_damage(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

// Why a file must be rebuilt, when a statement on it returned a damage code.
std::string damage_reason(int rc) {
  return std::string("not a readable database (") + sqlite().errstr(rc) + ")";
}

Error sqlite_error(const std::string& path, sqlite3* db, const std::string& what) {
  return Error(Errc::kIo, "index " + path + ": " + what + ": " + sqlite().errmsg(db));
}

// The outcome of one attempt to open and check the file: a usable database, or a reason
// to delete the file and try again.
struct Attempt {
  sqlite3* db = nullptr;
  std::string rebuild_reason;
};

// Runs `sql` (no rows wanted). Returns the SQLite result code.
int exec(sqlite3* db, const char* sql) { return sqlite().exec(db, sql, nullptr, nullptr, nullptr); }

// Checks the schema inside the open transaction, creating it in an empty database.
// Returns a rebuild reason, "" when the schema is usable, or an error.
Result<std::string> check_schema(const std::string& path, sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  int rc = sqlite().prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr);
  if (rc == SQLITE_OK) rc = sqlite().step(st);
  if (is_damage(rc)) {
    sqlite().finalize(st);
    return damage_reason(rc);
  }
  if (rc != SQLITE_ROW) {
    Error e = sqlite_error(path, db, "reading the schema");
    sqlite().finalize(st);
    return e;
  }
  int64_t objects = sqlite().column_int64(st, 0);
  sqlite().finalize(st);

  if (objects == 0) {
    std::string sql = std::string(kSchema) + "INSERT INTO meta VALUES ('schema', '" +
                      std::to_string(kIndexSchemaVersion) + "');";
    rc = exec(db, sql.c_str());
    if (is_damage(rc)) return damage_reason(rc);
    if (rc != SQLITE_OK) return sqlite_error(path, db, "creating the schema");
    return std::string();
  }

  rc = sqlite().prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema'", -1, &st, nullptr);
  if (rc != SQLITE_OK) {
    // The usual cause is "no such table: meta": something else's database, or a
    // half-created one. Either way it is not ours to keep.
    std::string reason = std::string("no schema version (") + sqlite().errmsg(db) + ")";
    sqlite().finalize(st);
    return reason;
  }
  rc = sqlite().step(st);
  std::string version;
  if (rc == SQLITE_ROW) {
    const unsigned char* text = sqlite().column_text(st, 0);
    if (text != nullptr) version = reinterpret_cast<const char*>(text);
  }
  sqlite().finalize(st);
  if (is_damage(rc)) return damage_reason(rc);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(path, db, "reading meta");
  if (rc == SQLITE_DONE) return std::string("no schema version in meta");
  if (version != std::to_string(kIndexSchemaVersion)) {
    return "schema version " + version + ", expected " + std::to_string(kIndexSchemaVersion);
  }
  return std::string();
}

Result<Attempt> attempt(const std::string& path, const IndexOptions& options) {
  sqlite3* db = nullptr;
  int rc = sqlite().open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite().errmsg(db) : sqlite().errstr(rc);
    sqlite().close_v2(db);
    if (is_damage(rc)) return Attempt{nullptr, "not a readable database (" + msg + ")"};
    return fail(Errc::kIo, "index " + path + ": open: " + msg);
  }
  auto give_up = [&](Error e) -> Result<Attempt> {
    sqlite().close_v2(db);
    return e;
  };
  auto rebuild = [&](std::string reason) -> Result<Attempt> {
    sqlite().close_v2(db);
    return Attempt{nullptr, std::move(reason)};
  };
  sqlite().busy_timeout(db, options.busy_timeout_ms);

  // The first statement that reads the file is where a non-database shows itself.
  // WAL: readers never block the writer, and a commit is an append rather than a
  // rewrite. synchronous=NORMAL: in WAL mode a commit then does no fsync (only a
  // checkpoint does); a power cut may lose the last commits but cannot corrupt the
  // file, and losing them only costs a rehash.
  rc = exec(db, "PRAGMA journal_mode=WAL");
  if (is_damage(rc)) return rebuild(damage_reason(rc));
  if (rc != SQLITE_OK) return give_up(sqlite_error(path, db, "setting WAL mode"));
  rc = exec(db, "PRAGMA synchronous=NORMAL");
  if (rc != SQLITE_OK) return give_up(sqlite_error(path, db, "setting synchronous"));
  // Reads through a mapping rather than a pread per page: a settled record of 10,000
  // steps is megabytes, hundreds of overflow pages. Best effort: without it reads
  // still work.
  exec(db, "PRAGMA mmap_size=268435456");

  // The check runs in a write transaction so that two processes creating one new file
  // at once do not both create the schema: the second waits, then finds it.
  rc = exec(db, "BEGIN IMMEDIATE");
  if (is_damage(rc)) return rebuild(damage_reason(rc));
  if (rc != SQLITE_OK) return give_up(sqlite_error(path, db, "locking"));
  auto checked = check_schema(path, db);
  if (!checked.ok() || !checked->empty()) exec(db, "ROLLBACK");
  if (!checked.ok()) return give_up(checked.error());
  if (!checked->empty()) return rebuild(std::move(checked).value());
  rc = exec(db, "COMMIT");
  if (rc != SQLITE_OK) {
    Error e = sqlite_error(path, db, "creating the schema");
    exec(db, "ROLLBACK");
    return give_up(e);
  }
  return Attempt{db, ""};
}

// Deletes the database and its WAL companions. Another process that still has the file
// open keeps its (now nameless) copy; that is acceptable for a disposable cache.
Result<void> remove_files(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::string p = path + suffix;
    if (unlink(p.c_str()) != 0 && errno != ENOENT) {
      return fail(Errc::kIo, "index " + p + ": unlink: " + std::strerror(errno));
    }
  }
  return Ok{};
}

int64_t ns_of(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + static_cast<int64_t>(t.tv_nsec);
}

// SQLite integers are signed 64-bit; dev and inode numbers are stored by bit pattern.
int64_t as_signed(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

bool stamp_is_racy(const FileStamp& stamp, int64_t verified_ns) {
  int64_t changed = std::max(stamp.mtime_ns, stamp.ctime_ns);
  // changed + window > verified, written so that nothing overflows.
  if (verified_ns < std::numeric_limits<int64_t>::min() + kRacyWindowNs) return true;
  return changed > verified_ns - kRacyWindowNs;
}

int64_t wall_ns(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Result<FileStamp> FileStamp::of(const std::string& path) { return at(AT_FDCWD, path.c_str()); }

Result<FileStamp> FileStamp::at(int dirfd, const char* path) {
  struct stat st {};
  if (::fstatat(dirfd, path, &st, 0) != 0) {
    int err = errno;
    return fail(err == ENOENT ? Errc::kNotFound : Errc::kIo,
                std::string("stat ") + path + ": " + std::strerror(err));
  }
  FileStamp s;
  s.dev = static_cast<uint64_t>(st.st_dev);
  s.ino = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<int64_t>(st.st_size);
  s.mtime_ns = ns_of(st.st_mtim);
  s.ctime_ns = ns_of(st.st_ctim);
  return s;
}

Result<std::unique_ptr<Index>> Index::open(const std::string& path, const IndexOptions& options) {
  if (!sqlite().error.empty()) return fail(Errc::kIo, "index " + path + ": " + sqlite().error);
  BERTH_TRY(Attempt first, attempt(path, options));
  std::string reason = first.rebuild_reason;
  sqlite3* db = first.db;
  if (db == nullptr) {
    BERTH_CHECK(remove_files(path));
    BERTH_TRY(Attempt second, attempt(path, options));
    if (second.db == nullptr) {
      return fail(Errc::kIo, "index " + path +
                                 ": still unusable after recreating it: " + second.rebuild_reason);
    }
    db = second.db;
  }
  bool rebuilt = !reason.empty();
  std::unique_ptr<Index> index(new Index(path, db, std::move(reason)));
  auto prepared = index->prepare_all();
  if (!prepared.ok() && !rebuilt) {
    // The right version but not its tables (damaged, or written by a build whose
    // schema differed): rebuilt like any other unusable file.
    index.reset();
    BERTH_CHECK(remove_files(path));
    BERTH_TRY(Attempt again, attempt(path, options));
    if (again.db == nullptr) {
      return fail(Errc::kIo, "index " + path + ": still unusable after recreating it: " +
                                 again.rebuild_reason);
    }
    index.reset(new Index(path, again.db,
                          "its tables do not match schema version " +
                              std::to_string(kIndexSchemaVersion) + " (" +
                              prepared.error().message() + ")"));
    prepared = index->prepare_all();
  }
  BERTH_CHECK(prepared);
  return index;
}

Index::Index(std::string path, sqlite3* db, std::string rebuilt_reason)
    : path_(std::move(path)), db_(db), rebuilt_reason_(std::move(rebuilt_reason)) {}

Index::~Index() {
  if (txn_depth_ > 0) sqlite().step(stmts_[kCommit]);
  for (sqlite3_stmt* st : stmts_) sqlite().finalize(st);
  sqlite().close_v2(db_);
  // A damaged file would only be found damaged again; the next open() starts afresh.
  if (corrupt_) (void)remove_files(path_);
}

Result<void> Index::prepare_all() {
  for (int i = 0; i < kStmtCount; ++i) {
    if (sqlite().prepare_v3(db_, kStatements[i], -1, SQLITE_PREPARE_PERSISTENT, &stmts_[i],
                            nullptr) != SQLITE_OK) {
      return sqlite_error(path_, db_, std::string("preparing ") + kStatements[i]);
    }
  }
  return Ok{};
}

void Index::note_result(int rc) {
  if (is_damage(rc)) corrupt_ = true;
}

void Index::run_write(sqlite3_stmt* stmt) {
  int rc = sqlite().step(stmt);
  note_result(rc);
  if (rc != SQLITE_DONE) ++write_errors_;
  sqlite().reset(stmt);
  sqlite().clear_bindings(stmt);
}

namespace {

// Binds text or blob bytes. SQLITE_STATIC: the caller's buffer outlives the step.
bool bind_bytes(sqlite3_stmt* st, int i, std::string_view bytes, bool blob) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  int n = static_cast<int>(bytes.size());
  int rc = blob ? sqlite().bind_blob(st, i, bytes.data(), n, SQLITE_STATIC)
                : sqlite().bind_text(st, i, bytes.data(), n, SQLITE_STATIC);
  return rc == SQLITE_OK;
}

std::string column_bytes(sqlite3_stmt* st, int i) {
  const void* data = sqlite().column_blob(st, i);
  int n = sqlite().column_bytes(st, i);
  if (data == nullptr || n <= 0) return std::string();
  return std::string(static_cast<const char*>(data), static_cast<size_t>(n));
}

}  // namespace

std::optional<std::string> Index::file_hash(const std::string& path, const FileStamp& stamp) {
  std::lock_guard lock(mu_);
  sqlite3_stmt* st = stmts_[kFileGet];
  std::optional<std::string> hit;
  if (bind_bytes(st, 1, path, false)) {
    int rc = sqlite().step(st);
    note_result(rc);
    if (rc == SQLITE_ROW) {
      FileStamp seen;
      seen.dev = static_cast<uint64_t>(sqlite().column_int64(st, 0));
      seen.ino = static_cast<uint64_t>(sqlite().column_int64(st, 1));
      seen.size = sqlite().column_int64(st, 2);
      seen.mtime_ns = sqlite().column_int64(st, 3);
      seen.ctime_ns = sqlite().column_int64(st, 4);
      int64_t verified = sqlite().column_int64(st, 6);
      if (seen == stamp && (verified == 0 || !stamp_is_racy(seen, verified))) {
        hit = column_bytes(st, 5);
      }
    }
  }
  sqlite().reset(st);
  sqlite().clear_bindings(st);
  return hit;
}

void Index::remember_file(const std::string& path, const FileStamp& stamp, const std::string& hash,
                          int64_t verified_ns) {
  std::lock_guard lock(mu_);
  sqlite3_stmt* st = stmts_[kFilePut];
  bool bound = bind_bytes(st, 1, path, false) &&
               sqlite().bind_int64(st, 2, as_signed(stamp.dev)) == SQLITE_OK &&
               sqlite().bind_int64(st, 3, as_signed(stamp.ino)) == SQLITE_OK &&
               sqlite().bind_int64(st, 4, stamp.size) == SQLITE_OK &&
               sqlite().bind_int64(st, 5, stamp.mtime_ns) == SQLITE_OK &&
               sqlite().bind_int64(st, 6, stamp.ctime_ns) == SQLITE_OK &&
               bind_bytes(st, 7, hash, false) &&
               sqlite().bind_int64(st, 8, verified_ns) == SQLITE_OK;
  if (!bound) {
    ++write_errors_;
    sqlite().clear_bindings(st);
    return;
  }
  run_write(st);
}

std::optional<std::string> Index::get_blob(Stmt which, std::string_view key) {
  std::lock_guard lock(mu_);
  sqlite3_stmt* st = stmts_[which];
  std::optional<std::string> hit;
  if (bind_bytes(st, 1, key, false)) {
    int rc = sqlite().step(st);
    note_result(rc);
    if (rc == SQLITE_ROW) hit = column_bytes(st, 0);
  }
  sqlite().reset(st);
  sqlite().clear_bindings(st);
  return hit;
}

void Index::put_blob(Stmt which, std::string_view key, std::optional<std::string_view> blob) {
  std::lock_guard lock(mu_);
  sqlite3_stmt* st = stmts_[which];
  if (!bind_bytes(st, 1, key, false) || (blob && !bind_bytes(st, 2, *blob, true))) {
    ++write_errors_;
    sqlite().clear_bindings(st);
    return;
  }
  run_write(st);
}

std::optional<std::string> Index::step_row(const std::string& key) {
  return get_blob(kStepGet, key);
}

void Index::remember_step(const std::string& key, std::string_view row) {
  put_blob(kStepPut, key, row);
}

std::optional<std::string> Index::settled(const std::string& pipeline) {
  return get_blob(kSettledGet, pipeline);
}

void Index::remember_settled(const std::string& pipeline, std::string_view record) {
  put_blob(kSettledPut, pipeline, record);
}

void Index::forget_settled(const std::string& pipeline) {
  put_blob(kSettledDelete, pipeline, std::nullopt);
}

Result<void> Index::begin() {
  std::lock_guard lock(mu_);
  if (txn_depth_ > 0) {
    ++txn_depth_;
    return Ok{};
  }
  int rc = sqlite().step(stmts_[kBegin]);
  sqlite().reset(stmts_[kBegin]);
  note_result(rc);
  if (rc != SQLITE_DONE) return sqlite_error(path_, db_, "begin");
  txn_depth_ = 1;
  return Ok{};
}

Result<void> Index::commit() {
  std::lock_guard lock(mu_);
  if (txn_depth_ == 0) return fail(Errc::kInternal, "index " + path_ + ": commit without begin");
  if (--txn_depth_ > 0) return Ok{};
  // A failed write (SQLITE_FULL, an I/O error) may have rolled the whole transaction
  // back already; SQLite is then back in autocommit mode and COMMIT would fail with a
  // less helpful message.
  if (sqlite().get_autocommit(db_)) {
    ++write_errors_;
    return fail(Errc::kIo,
                "index " + path_ + ": transaction was rolled back by an earlier write error");
  }
  int rc = sqlite().step(stmts_[kCommit]);
  sqlite().reset(stmts_[kCommit]);
  note_result(rc);
  if (rc != SQLITE_DONE) {
    Error e = sqlite_error(path_, db_, "commit");
    ++write_errors_;
    // Leave autocommit mode behind us whatever happened, so later writes still land.
    if (!sqlite().get_autocommit(db_)) exec(db_, "ROLLBACK");
    return e;
  }
  return Ok{};
}

size_t Index::write_errors() const {
  std::lock_guard lock(mu_);
  return write_errors_;
}

}  // namespace berth::pipeline
