// FileStore: the file:// backend, an ObjectStore in a directory (spec 05 §2).
//
// Safe for any number of processes on any number of hosts sharing the directory (a
// project's .berth/store, or a Lustre/GPFS/NFS path for N workers): every object and
// row is written to a hidden temporary file beside its final name, made durable, and
// published with link() so that exactly one writer wins and a reader never sees a
// partial file (spec 05 §4). Where hard links are unsupported it falls back to
// renameat2(RENAME_NOREPLACE), and only where that is unsupported too to the racy
// check-then-rename.
//
// Layout under DIR:
//   FORMAT                      "berth-store 1\n", written once, checked on open
//   objects/ab/cdef…            object sha256:abcdef… (0444)
//   rows/v1/steps/<key>         a row: the path is the row address (0444)
//   corrupt/<hex>.<token>       copies moved aside when a read found them corrupt
#pragma once

#include <memory>
#include <string>

#include "store/object_store.h"
#include "store/posix_io.h"
#include "util/clock.h"

namespace berth::store {

class FileStore : public ObjectStore {
 public:
  struct Options {
    // fsync each object before publishing it. Without it an object is made durable
    // at the latest before any row is published: every put_row first waits on a
    // syncfs barrier shared by concurrent writers (spec 05 §4), so a row never names
    // an object a crash could lose, and a row is never torn (it is write-once and
    // unverifiable: a torn one would block its address for good). A torn object with
    // no row is caught by verification and recomputed.
    bool fsync_objects = false;
    // false skips link() and publishes with renameat2(RENAME_NOREPLACE), as on a
    // filesystem without hard links (tests of the fallback).
    bool use_hard_links = true;
    // What "now" is when a use refreshes an entry's time (spec 05 §10); null: the real
    // clock. The times themselves are the file system's.
    const Clock* clock = nullptr;
  };

  // Opens the store in `dir` (an absolute or relative path), creating it when missing.
  // Fails with kRefused when `dir` holds something that is not a berth store (files
  // but no FORMAT, or a FORMAT of another version), kIo when it cannot be created.
  static Result<std::unique_ptr<FileStore>> open(const std::string& dir, Options options);
  static Result<std::unique_ptr<FileStore>> open(const std::string& dir) {
    return open(dir, Options{});
  }

  ~FileStore() override;
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  const std::string& dir() const { return dir_; }
  // Where object `name` lives (whether or not it exists); `name` must be valid.
  std::string object_path(std::string_view name) const;
  // Where the row at `address` lives; `address` must be valid.
  std::string row_path(std::string_view address) const;

  std::string describe() const override;
  Result<std::string> put_object(std::string_view bytes) override;
  Result<std::string> put_object_file(const std::string& path) override;
  // Links `path` into place after hashing it (no copy, no new inode) when it is a
  // regular file with one link on this filesystem; otherwise put_object_file().
  Result<std::string> adopt_object_file(const std::string& path) override;
  Result<ObjectRead> get_object(std::string_view name) override;
  Result<ObjectRead> get_object_to_file(std::string_view name,
                                        const std::string& dest_path) override;
  // Hard-links when `dest_path` is on the store's filesystem, verifying the linked copy;
  // copies otherwise.
  Result<ObjectRead> materialize(std::string_view name, const std::string& dest_path) override;
  Result<bool> has_object(std::string_view name) override;
  // Each shard directory named is opened once for the call: a stat then walks one
  // component, the object's own name.
  void has_objects(std::span<const std::string> names, std::span<char> present) override;
  Result<RowPut> put_row(std::string_view address, std::string_view bytes) override;
  Result<std::optional<std::string>> get_row(std::string_view address) override;
  Result<std::vector<std::string>> list_rows(std::string_view prefix) override;
  Result<bool> touch_row(std::string_view address) override;

  // Collection (spec 05 §10). An entry's time is the later of its mtime and its atime:
  // a refresh sets the atime alone, so that a result hard-linked to an object keeps
  // the mtime its stamp records (spec 04 §7). collect() renames each entry into a
  // hidden DIR/.gc/<token>/ first, so that a writer's refresh either reaches it before
  // (its time is then young and it is put back) or finds it gone (and writes it
  // again); a collector that died holding entries has them put back by the next one.
  Result<std::vector<StoreEntry>> list_objects() override;
  Result<std::vector<StoreEntry>> list_row_entries(std::string_view prefix) override;
  Result<std::vector<StoreEntry>> list_debris() override;
  Result<std::vector<std::string>> collect(
      EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
      const std::function<Result<std::set<std::string>>()>& spare) override;

 private:
  FileStore(std::string dir, Options options, std::unique_ptr<posix::SyncBarrier> barrier);

  // Moves a copy that failed verification to corrupt/, if `path` is still the inode
  // that was read (dev, ino), and returns the problem text for ObjectRead.
  std::string quarantine(std::string_view name, const std::string& path, uint64_t dev, uint64_t ino,
                         const std::string& actual_hex);
  // Publishes the temporary file `tmp` as object `name`.
  Result<void> publish_object(const std::string& tmp, std::string_view name);
  // Whether `path` exists; when its time is older than kRefreshAfter, its atime is set
  // to now. False also when it vanished between the two (a collector took it).
  Result<bool> refresh(const std::string& path);
  int64_t now_ms() const;
  // Puts back what a collector that died left in DIR/.gc/.
  void recover_held();

  std::string dir_;
  Options options_;
  std::unique_ptr<posix::SyncBarrier> barrier_;
  // objects/, opened (O_PATH) once: has_object() stats "ab/cdef…" under it, a walk of
  // two components rather than the whole path (a settled check stats every object).
  // -1 when it could not be opened: the whole path is used.
  int objects_fd_ = -1;
  // dir_, opened (O_PATH) once: get_row() opens "rows/…" under it, so that a run's
  // 10^6 look-ups do not each walk dir_'s whole path. -1 when it could not be opened:
  // the whole path is used.
  int root_fd_ = -1;
};

}  // namespace berth::store
