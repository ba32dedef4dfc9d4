// A worker's identity and its cache directory (spec 06 §5): `berth run --worker`.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "util/clock.h"
#include "util/result.h"

namespace berth::pipeline {

inline constexpr size_t kMaxWorkerName = 64;

// A worker name a path component and a record field can both carry. Characters outside
// [A-Za-z0-9._-] become '-'; a leading '.' becomes '_'; the result is cut to
// kMaxWorkerName. Refused (kInvalidInput naming the input): empty, or containing '/'
// (a worker is named in its own directory, so --worker=a/b is far likelier a mistake
// than a wish).
Result<std::string> check_worker_name(std::string_view given);

// A short name for an unnamed worker: "w<base-36 ms since epoch>-<pid>-<counter>",
// enough to tell two apart and honest about saying nothing else.
std::string generate_worker_name(const Clock& clock, pid_t pid);

// "250ms", "30s", "10m", "2h", "7d", or a bare number of seconds ("90", "0.5"): a positive
// duration. Anything else is kInvalidInput naming `what` (e.g. "--lease") and the text.
Result<std::chrono::milliseconds> parse_duration(std::string_view text, std::string_view what);

// A duration as parse_duration() reads it, in the largest unit that writes it whole:
// "2h", "30m", "90s", "250ms".
std::string duration_text(std::chrono::milliseconds d);

// An exclusive claim on a cache directory: DIR/worker.lock created with O_EXCL,
// holding one line "worker=<name> host=<host> pid=<pid> since=<ISO-8601 UTC>\n".
// Removed when the CacheLock is destroyed. Movable, not copyable.
class CacheLock {
 public:
  // kRefused when the lock exists, naming the file and its holder's line, and saying
  // how to clear it: "if no worker is using <dir>, delete <path>". When the holder's
  // host is `host` and its pid is not alive, says it is stale (the process is gone).
  // kIo when it cannot be created.
  static Result<CacheLock> acquire(const std::string& dir, std::string_view worker,
                                   std::string_view host, const Clock& clock);
  CacheLock(CacheLock&& o) noexcept;
  CacheLock& operator=(CacheLock&& o) noexcept;
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;
  ~CacheLock();
  const std::string& path() const { return path_; }

 private:
  explicit CacheLock(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace berth::pipeline
