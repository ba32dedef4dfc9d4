#include "pipeline/worker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

constexpr std::string_view kLockFileName = "worker.lock";
// A holder line is one short line; read no more of a lock file than this.
constexpr size_t kMaxLockBytes = 4096;

bool name_char(char c) { return str::is_alnum(c) || c == '.' || c == '_' || c == '-'; }

std::string base36(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v % 36]);
    v /= 36;
  } while (v != 0);
  return out;
}


// The value of `key=` in a holder line, or "" when absent.
std::string_view holder_field(std::string_view line, std::string_view key) {
  for (std::string_view part : str::split_ws(line)) {
    if (part.size() > key.size() && part.substr(0, key.size()) == key && part[key.size()] == '=') {
      return part.substr(key.size() + 1);
    }
  }
  return {};
}

// True when the holder line names `host` and a pid that is certainly gone. Only a
// process on this host can be asked about, and only with kill(pid, 0): ESRCH is the
// one answer that means "no such process" (EPERM is a live process of another user).
bool holder_is_gone(std::string_view line, std::string_view host) {
  if (host.empty() || holder_field(line, "host") != host) return false;
  auto pid = str::parse_uint(holder_field(line, "pid"),
                             static_cast<uint64_t>(std::numeric_limits<pid_t>::max()));
  // pid 0 and below would address process groups; parse_uint already refuses signs.
  if (!pid.ok() || *pid == 0) return false;
  return ::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH;
}

// Reads what a lock file says about its holder, for the refusal message.
std::string read_holder(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return {};
  std::string buf(kMaxLockBytes, '\0');
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t r = ::read(fd, buf.data() + got, buf.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  buf.resize(got);
  size_t nl = buf.find('\n');
  if (nl != std::string::npos) buf.resize(nl);
  return std::string(str::trim(buf));
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t r = ::write(fd, data.data(), data.size());
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data.remove_prefix(static_cast<size_t>(r));
  }
  return true;
}

}  // namespace

Result<std::string> check_worker_name(std::string_view given) {
  if (given.empty()) {
    return fail(Errc::kInvalidInput, "worker name: empty (give --worker=NAME or leave it out)");
  }
  if (given.find('/') != std::string_view::npos) {
    // A worker is named in its own directory, <cache>/workers/<name>: a '/' would make
    // it a path, far likelier a mistake than a wish (spec 06 §5).
    return fail(Errc::kInvalidInput,
                fmt::format("worker name \"{}\": contains '/', which a worker name cannot "
                            "(it names the worker's cache directory)",
                            str::printable(given)));
  }
  std::string out;
  out.reserve(std::min(given.size(), kMaxWorkerName));
  // Byte by byte: every byte of a multi-byte UTF-8 character becomes '-', so the
  // result is plain ASCII that a path, a TSV field and a row can all carry.
  for (char c : given.substr(0, kMaxWorkerName)) out.push_back(name_char(c) ? c : '-');
  // A leading '.' would hide the directory and is refused in row addresses.
  if (out[0] == '.') out[0] = '_';
  return out;
}

std::string generate_worker_name(const Clock& clock, pid_t pid) {
  static std::atomic<uint64_t> counter{0};
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock.wall().time_since_epoch())
                .count();
  return fmt::format("w{}-{}-{}", base36(ms < 0 ? 0 : static_cast<uint64_t>(ms)),
                     static_cast<long>(pid), counter.fetch_add(1));
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text, std::string_view what) {
  auto refuse = [&](std::string_view why) -> Failure {
    return fail(Errc::kInvalidInput, fmt::format("{} \"{}\": {}", what, str::printable(text), why));
  };
  constexpr std::string_view kForms =
      "expected a positive duration: 250ms, 30s, 10m, 2h, 7d, or a number of seconds";

  // <digits>[.<digits>]<unit>, every part strict: no sign, no exponent, no spaces.
  size_t i = 0;
  uint64_t whole = 0;
  bool any_digit = false;
  for (; i < text.size() && str::is_digit(text[i]); ++i) {
    any_digit = true;
    if (__builtin_mul_overflow(whole, uint64_t{10}, &whole) ||
        __builtin_add_overflow(whole, static_cast<uint64_t>(text[i] - '0'), &whole)) {
      return refuse("too large");
    }
  }
  // The fraction is kept to 9 digits (a nanosecond of an hour is below a millisecond);
  // further digits are allowed but cannot change the result.
  uint64_t frac = 0;
  uint64_t frac_scale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    bool frac_digit = false;
    for (; i < text.size() && str::is_digit(text[i]); ++i) {
      frac_digit = true;
      if (frac_scale < 1'000'000'000) {
        frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
        frac_scale *= 10;
      }
    }
    if (!frac_digit) return refuse(kForms);
    any_digit = true;
  }
  if (!any_digit) return refuse(kForms);

  std::string_view unit = text.substr(i);
  uint64_t unit_ms = 0;
  if (unit.empty() || unit == "s") {
    unit_ms = 1000;
  } else if (unit == "ms") {
    unit_ms = 1;
  } else if (unit == "m") {
    unit_ms = 60'000;
  } else if (unit == "h") {
    unit_ms = 3'600'000;
  } else if (unit == "d") {
    unit_ms = 86'400'000;
  } else {
    return refuse(kForms);
  }

  uint64_t ms = 0;
  if (__builtin_mul_overflow(whole, unit_ms, &ms) ||
      __builtin_add_overflow(ms, frac * unit_ms / frac_scale, &ms) ||
      ms > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return refuse("too large");
  }
  // Truncated to the millisecond; "0", "0.0001s" and "0.5ms" are all no time at all.
  if (ms == 0) return refuse("must be at least 1ms");
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

std::string duration_text(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return fmt::format("{}h", ms / 3'600'000);
  if (ms != 0 && ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
  if (ms != 0 && ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

Result<CacheLock> CacheLock::acquire(const std::string& dir, std::string_view worker,
                                     std::string_view host, const Clock& clock) {
  std::string path = dir + "/" + std::string(kLockFileName);
  // O_EXCL decides between any number of processes in one system call; flock would
  // be unreliable on exactly the network filesystems this guards (spec 06 §5).
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    int err = errno;
    if (err != EEXIST) {
      return fail(Errc::kIo,
                  fmt::format("{}: cannot create the cache lock: {}", path, std::strerror(err)));
    }
    std::string holder = read_holder(path);
    std::string who = holder.empty() ? std::string("holder not recorded")
                                     : fmt::format("held by {}", str::printable(holder, 256));
    std::string stale;
    if (holder_is_gone(holder, host)) {
      stale = fmt::format("; the lock is stale: process {} on {} is gone",
                          holder_field(holder, "pid"), host);
    }
    return fail(Errc::kRefused,
                fmt::format("cache directory {} is in use by another worker ({}: {}){}; "
                            "if no worker is using {}, delete {}",
                            dir, path, who, stale, dir, path));
  }
  std::string line = fmt::format("worker={} host={} pid={} since={}\n", worker, host,
                                 static_cast<long>(::getpid()), utc_text(clock.wall()));
  bool written = write_all(fd, line);
  int err = errno;
  ::close(fd);
  if (!written) {
    ::unlink(path.c_str());
    return fail(Errc::kIo,
                fmt::format("{}: cannot write the cache lock: {}", path, std::strerror(err)));
  }
  return CacheLock(std::move(path));
}

CacheLock::CacheLock(CacheLock&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }

CacheLock& CacheLock::operator=(CacheLock&& o) noexcept {
  if (this != &o) {
    if (!path_.empty()) ::unlink(path_.c_str());
    path_ = std::move(o.path_);
    o.path_.clear();
  }
  return *this;
}

CacheLock::~CacheLock() {
  // Removed on drop; a crash leaves it behind, and the next worker's refusal says to
  // delete it (spec 06 §5).
  if (!path_.empty()) ::unlink(path_.c_str());
}

}  // namespace berth::pipeline
