// POSIX helpers for FileStore: streamed hashing copies, the group-commit durability
// barrier, and the write-once publish step (spec 05 §4). Descriptors, temporary files,
// whole writes and fsync are util/files.h's, shared with every other writer.
//
// Internal to the store library. Every failure names the path and what the operating
// system said; ENOENT becomes kNotFound, anything else kIo.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "util/files.h"
#include "util/result.h"
#include "util/sha256.h"

namespace berth::store::posix {

// Whether link(2) failing with `err` means no hard link can be made here (another
// filesystem, one without links, too many links, not permitted): copy instead.
bool links_unsupported(int err);

// Makes `out` share `in`'s bytes without copying them (a reflink: ioctl FICLONE), where
// the filesystem can (btrfs, XFS); false where it cannot (ext4, tmpfs, another
// filesystem), `out` then as it was. Neither descriptor's offset moves.
bool clone_file(int in, int out);

// mkdir -p, mode 0755; an existing directory is fine.
Result<void> make_dirs(const std::string& path);

// Copies `in` to `out` (when out >= 0) in large chunks, hashing every byte read.
// Returns the number of bytes copied. Never holds more than one chunk in memory.
Result<uint64_t> copy_hashing(int in, const std::string& in_path, int out,
                              const std::string& out_path, Sha256& hash);

// Reads `in` to its end into *out (replacing it), hashing every byte; `expected` is the
// size stat reported (a file that grew is read to its real end). Past a few hundred
// KiB the hash runs on a second thread behind the reads, so a verified read of a large
// object costs about max(read, hash), not their sum.
Result<void> read_hashing(int in, const std::string& in_path, size_t expected,
                          std::string* out, Sha256& hash);

// A durability barrier shared by concurrent writers (group commit): wait() returns
// once a syncfs(2) of the filesystem holding `dir` has completed that *started after*
// wait() was called, so everything this thread wrote before the call is on disk. One
// syncfs serves every thread waiting when it starts: N writers publishing at once pay
// about one flush between them, not N fsyncs each.
class SyncBarrier {
 public:
  // Opens `dir` for syncfs; fails with kIo when it cannot.
  static Result<std::unique_ptr<SyncBarrier>> open(const std::string& dir);
  Result<void> wait();
  uint64_t syncs() const;  // how many syncfs calls were made

 private:
  SyncBarrier(files::Fd fd, std::string dir) : fd_(std::move(fd)), dir_(std::move(dir)) {}
  files::Fd fd_;
  std::string dir_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t requested_ = 0;  // tickets handed out
  uint64_t completed_ = 0;  // every ticket up to this one is durable
  uint64_t failed_ = 0;     // every ticket up to this one saw the last failure
  int error_ = 0;
  bool running_ = false;
  uint64_t syncs_ = 0;
};

enum class Published { kCreated, kExisted };

// Publishes the complete file `tmp` at `final` unless something is already there,
// atomically with respect to other processes (spec 05 §4):
//   1. link(tmp, final): one system call decides the winner; EEXIST means we lost.
//   2. where hard links are unsupported (EPERM, EXDEV, ENOTSUP, EMLINK) or
//      `use_link` is false: renameat2(RENAME_NOREPLACE), equally atomic.
//   3. where that flag is unsupported too (EINVAL, ENOSYS): check, then rename —
//      racy, a later writer can replace an earlier one (spec 05 §4: costs duplicated
//      work for leases, nothing for objects).
// `tmp` is gone afterwards whatever the outcome.
Result<Published> publish(const std::string& tmp, const std::string& final, bool use_link);

}  // namespace berth::store::posix
