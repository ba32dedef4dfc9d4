// File helpers: whole-file reads with a size bound, and the one way berth writes a file
// that a reader may look at any moment — a complete temporary file in the same
// directory, then published under its name: by rename(), replacing what was there
// (write_file_atomic), or by the store's link, never replacing (store/posix_io.h).
//
// Every failure names the path and says what the operating system said.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

namespace berth::files {

// The default bound for files berth parses (hostfiles, env files, Flux R documents).
inline constexpr size_t kMaxParsedFileBytes = 64ull * 1024 * 1024;

// Reads the whole file. Fails with kNotFound when it does not exist, kIo when it can't
// be read or is a directory, kInvalidInput when it is larger than `max_bytes`.
Result<std::string> read_file(const std::string& path, size_t max_bytes = kMaxParsedFileBytes);

// Writes `data` to `path` so that a reader sees either the old file or the whole new
// one: write_temp() in the same directory, then rename over `path`. With `sync` the new
// file's bytes are fsynced before the rename; without, a crash soon after may leave the
// old file, or an empty one, never part of the new one's bytes under the name. `mode`
// is the new file's, less the umask. The directory is not fsynced.
Result<void> write_file_atomic(const std::string& path, std::string_view data, bool sync = true,
                               unsigned mode = 0644);

// Writes `data` to a new temporary file in `dir` (create_temp(), `mode`), fsyncs it
// when `sync`, and returns its path: a complete file for the caller to publish. On
// failure nothing is left behind.
Result<std::string> write_temp(const std::string& dir, std::string_view data, unsigned mode,
                               bool sync);

bool exists(const std::string& path);

// Bytes that stay where they lie while anyone holds them: a string's, or a file's
// mapped into memory (map_file()). Megabytes read once and looked at from several
// places are shared this way rather than copied.
using SharedBytes = std::shared_ptr<const std::string_view>;
SharedBytes share_string(std::string bytes);

// The file's bytes mapped read-only (MAP_PRIVATE), every page mapped at once: a file of
// megabytes in the page cache is then looked at where it lies, neither copied nor given
// pages of the process's own. Fails as os_error() says when it cannot be opened or
// mapped (kNotFound: it does not exist), kInvalidInput when it is not a file of `size`
// bytes. A mapped file must not shrink while it is held (reading past its new end is
// SIGBUS): only for files that are written once, whole, and replaced by rename(), never
// written in place.
Result<SharedBytes> map_file(const std::string& path, size_t size);

// ---- The pieces the writers above are made of, for callers that stream a file ----

// fail(kNotFound when `err` is ENOENT, kUnavailable when it may pass (transient_errno),
// else kIo, "<path>: cannot <what>: <strerror>").
Failure os_error(const std::string& path, std::string_view what, int err);

// True for the errors a filesystem gives while it is full, read-only, unreachable or
// not yet permitted, which a later attempt may not meet: ENOSPC, EDQUOT, ESTALE, EIO,
// EACCES, EPERM, EROFS, the network's errors, and running out of descriptors or locks.
bool transient_errno(int err);

// An owned file descriptor; closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A temporary file removed on every early return; disarm() once it is published.
struct TempGuard {
  std::string path;
  ~TempGuard();
  void disarm() { path.clear(); }
};

// "<pid>.<random>.<n>": unique per call, across threads, processes and hosts (the
// random part is drawn once per process), for temporary and quarantine names.
std::string unique_suffix();

// "<dir>/.tmp.<unique_suffix>": a name no file has yet, for a temporary file or link.
// Hidden, so that a listing of published names skips it (spec 05 §4).
std::string temp_path(const std::string& dir);

// Creates a new, empty file at a temp_path() in `dir`, with O_EXCL and
// `mode` (0444 for stored copies: the mode binds later opens, not this descriptor).
// Sets *path to its path.
Result<Fd> create_temp(const std::string& dir, unsigned mode, std::string* path);

// Writes all `size` bytes, retrying short writes and EINTR.
Result<void> write_all(int fd, const void* data, size_t size, const std::string& path);

Result<void> fsync_fd(int fd, const std::string& path);
// fsync of a directory, so that a link or rename into it survives a crash. A
// filesystem that refuses to fsync a directory (EINVAL) is not an error.
Result<void> fsync_dir(const std::string& dir);

// The last path component's directory: "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string parent_dir(const std::string& path);

}  // namespace berth::files
