#include "store/posix_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

namespace berth::store::posix {

using files::Fd;
using files::os_error;
using files::parent_dir;
using files::write_all;

namespace {

// Big enough that system-call overhead vanishes next to hashing, small enough to stay
// in L2/L3 between the read and the hash.
constexpr size_t kChunk = 1u << 20;

}  // namespace

Result<void> make_dirs(const std::string& path) {
  if (path.empty()) return Ok{};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Ok{};
    return fail(Errc::kIo, fmt::format("{}: exists and is not a directory", path));
  }
  std::string parent = parent_dir(path);
  if (parent != path && parent != "." && parent != "/") BERTH_CHECK(make_dirs(parent));
  // EEXIST: another process made it between our stat and mkdir.
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return os_error(path, "create directory", errno);
  }
  return Ok{};
}

bool links_unsupported(int err) {
  return err == EXDEV || err == EPERM || err == EMLINK || err == ENOTSUP || err == EOPNOTSUPP ||
         err == ENOSYS;
}

bool clone_file(int in, int out) { return ::ioctl(out, FICLONE, in) == 0; }

namespace {

// Reads `in` to its end, hashing; the one-thread form, for hashing without a copy.
Result<uint64_t> hash_only(int in, const std::string& in_path, Sha256& hash) {
  // A stack buffer for the first read: a small file costs no allocation.
  char small[64 * 1024];
  std::unique_ptr<char[]> big;
  char* buf = small;
  size_t size = sizeof small;
  uint64_t total = 0;
  for (;;) {
    if (total >= sizeof small && !big) {
      big.reset(new char[kChunk]);
      buf = big.get();
      size = kChunk;
    }
    ssize_t n = ::read(in, buf, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(in_path, "read", errno);
    }
    if (n == 0) return total;
    hash.update(buf, static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
}

}  // namespace

Result<uint64_t> copy_hashing(int in, const std::string& in_path, int out,
                              const std::string& out_path, Sha256& hash) {
  ::posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (out < 0) return hash_only(in, in_path, hash);
  // A small file (most step outputs) is copied and hashed on this thread: starting a
  // hasher thread and its ring costs more than hashing a few hundred KiB. Past
  // kInline bytes the rest goes through the ring below.
  constexpr size_t kSmall = 64 * 1024, kInline = 256 * 1024;
  uint64_t inline_total = 0;
  {
    char small[kSmall];
    while (inline_total < kInline) {
      ssize_t n = ::read(in, small, sizeof small);
      if (n < 0) {
        if (errno == EINTR) continue;
        return os_error(in_path, "read", errno);
      }
      if (n == 0) return inline_total;
      hash.update(small, static_cast<size_t>(n));
      BERTH_CHECK(write_all(out, small, static_cast<size_t>(n), out_path));
      inline_total += static_cast<uint64_t>(n);
    }
  }
  // Hashing runs on its own thread, a ring of chunks behind the reads and writes, so a
  // put or a verified get costs max(hash, read + write) rather than their sum: the hash
  // is the limit, as for `openssl dgst` (bench/store). Both threads only read a chunk
  // once it is filled; a chunk is refilled only after it was written and hashed.
  constexpr size_t kRing = 4;
  std::unique_ptr<char[]> bufs(new char[kRing * kChunk]);
  size_t sizes[kRing] = {};
  std::mutex mu;
  std::condition_variable cv;
  size_t filled = 0, hashed = 0;  // chunks handed to the hasher, and hashed
  bool finished = false;          // no more chunks will be filled
  auto hasher = [&] {
    for (size_t i = 0;; ++i) {
      size_t n;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return filled > i || finished; });
        if (filled <= i) return;
        n = sizes[i % kRing];
      }
      hash.update(bufs.get() + (i % kRing) * kChunk, n);
      {
        std::lock_guard lock(mu);
        hashed = i + 1;
      }
      cv.notify_all();
    }
  };
  std::thread thread;
  try {
    thread = std::thread(hasher);
  } catch (const std::system_error&) {
    // No thread to be had: hash on this one (same bytes, same result, slower).
    std::unique_ptr<char[]> buf(new char[kChunk]);
    uint64_t total = inline_total;
    for (;;) {
      ssize_t n = ::read(in, buf.get(), kChunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        return os_error(in_path, "read", errno);
      }
      if (n == 0) return total;
      hash.update(buf.get(), static_cast<size_t>(n));
      BERTH_CHECK(write_all(out, buf.get(), static_cast<size_t>(n), out_path));
      total += static_cast<uint64_t>(n);
    }
  }
  auto stop = [&] {
    {
      std::lock_guard lock(mu);
      finished = true;
    }
    cv.notify_all();
    thread.join();
  };
  uint64_t total = inline_total;
  for (size_t i = 0;; ++i) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return i < hashed + kRing; });  // slot i % kRing is free
    }
    char* buf = bufs.get() + (i % kRing) * kChunk;
    ssize_t n = ::read(in, buf, kChunk);
    if (n < 0 && errno == EINTR) {
      --i;
      continue;
    }
    if (n < 0) {
      int err = errno;
      stop();
      return os_error(in_path, "read", err);
    }
    if (n == 0) break;
    {
      std::lock_guard lock(mu);
      sizes[i % kRing] = static_cast<size_t>(n);
      filled = i + 1;
    }
    cv.notify_all();
    auto wrote = write_all(out, buf, static_cast<size_t>(n), out_path);
    if (!wrote.ok()) {
      stop();
      return wrote.error();
    }
    total += static_cast<uint64_t>(n);
  }
  stop();  // the hasher drains every filled chunk before it sees `finished`
  return total;
}

Result<std::unique_ptr<SyncBarrier>> SyncBarrier::open(const std::string& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.valid()) return os_error(dir, "open directory", errno);
  return std::unique_ptr<SyncBarrier>(new SyncBarrier(std::move(d), dir));
}

Result<void> SyncBarrier::wait() {
  std::unique_lock lock(mu_);
  uint64_t ticket = ++requested_;  // what this thread wrote so far precedes the ticket
  while (completed_ < ticket && failed_ < ticket) {
    if (running_) {
      cv_.wait(lock);
      continue;
    }
    // Lead a round: it covers every ticket handed out before it starts.
    running_ = true;
    uint64_t covers = requested_;
    lock.unlock();
    int rc = ::syncfs(fd_.get());
    int err = rc == 0 ? 0 : errno;
    lock.lock();
    running_ = false;
    ++syncs_;
    if (rc == 0) {
      completed_ = std::max(completed_, covers);
    } else {
      failed_ = std::max(failed_, covers);
      error_ = err;
    }
    cv_.notify_all();
  }
  if (completed_ >= ticket) return Ok{};
  return os_error(dir_, "syncfs", error_);
}

uint64_t SyncBarrier::syncs() const {
  std::lock_guard lock(mu_);
  return syncs_;
}

Result<void> read_hashing(int in, const std::string& in_path, size_t expected,
                          std::string* out, Sha256& hash) {
  out->clear();
  constexpr size_t kInline = 256 * 1024;
  // Reads into out[have, ...), growing it by at most `step` at a time.
  auto read_some = [&](size_t have, size_t step) -> Result<size_t> {
    for (;;) {
      ssize_t n = ::read(in, out->data() + have, step);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return os_error(in_path, "read", errno);
    }
  };
  if (expected <= kInline) {
    size_t have = 0;
    for (;;) {
      size_t step = std::max<size_t>(expected - std::min(expected, have), 65536);
      out->resize(have + step);
      BERTH_TRY(size_t n, read_some(have, step));
      have += n;
      out->resize(have);
      if (n == 0) break;
    }
    hash.update(out->data(), out->size());
    return Ok{};
  }
  // Large: a hasher thread follows the reads. The buffer never moves while the hasher
  // may be reading it: it is reserved up front, and grown past that (a file that grew
  // after stat) only when the hasher has caught up and waits.
  out->reserve(expected + kChunk);
  std::mutex mu;
  std::condition_variable cv;
  size_t filled = 0, hashed = 0;
  bool finished = false;
  auto hasher = [&] {
    for (;;) {
      const char* base;
      size_t from, to;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return filled > hashed || finished; });
        if (filled == hashed) return;
        base = out->data();
        from = hashed;
        to = filled;
      }
      hash.update(base + from, to - from);
      {
        std::lock_guard lock(mu);
        hashed = to;
      }
      cv.notify_all();
    }
  };
  std::thread thread;
  bool threaded = true;
  try {
    thread = std::thread(hasher);
  } catch (const std::system_error&) {
    threaded = false;  // no thread to be had: hash at the end, on this one
  }
  auto stop = [&] {
    if (!threaded) return;
    {
      std::lock_guard lock(mu);
      finished = true;
    }
    cv.notify_all();
    thread.join();
  };
  size_t have = 0;
  for (;;) {
    {
      std::unique_lock lock(mu);
      if (have + kChunk > out->capacity()) {
        cv.wait(lock, [&] { return !threaded || hashed == filled; });  // the hasher idles
      }
      out->resize(have + kChunk);  // within capacity: the buffer stays put
    }
    auto n = read_some(have, kChunk);
    if (!n.ok()) {
      stop();
      return n.error();
    }
    {
      std::lock_guard lock(mu);
      have += *n;
      out->resize(have);
      filled = have;
    }
    cv.notify_all();
    if (*n == 0) break;
  }
  stop();
  if (!threaded) hash.update(out->data(), out->size());
  return Ok{};
}

Result<Published> publish(const std::string& tmp, const std::string& final, bool use_link) {
  auto drop_tmp = [&] { ::unlink(tmp.c_str()); };
  if (use_link) {
    if (::link(tmp.c_str(), final.c_str()) == 0) {
      drop_tmp();
      return Published::kCreated;
    }
    int err = errno;
    if (err == EEXIST) {
      drop_tmp();
      return Published::kExisted;
    }
    if (!links_unsupported(err)) {
      drop_tmp();
      return os_error(final, "link into place", err);
    }
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final.c_str(), RENAME_NOREPLACE) == 0) {
    return Published::kCreated;
  }
  int err = errno;
  if (err == EEXIST) {
    drop_tmp();
    return Published::kExisted;
  }
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP) {
    drop_tmp();
    return os_error(final, "rename into place", err);
  }
  // Last resort, with the window spec 05 §4 describes: two writers can both see the slot
  // empty and the second replaces the first.
  struct stat st {};
  if (::lstat(final.c_str(), &st) == 0) {
    drop_tmp();
    return Published::kExisted;
  }
  if (::rename(tmp.c_str(), final.c_str()) != 0) {
    int rerr = errno;
    drop_tmp();
    return os_error(final, "rename into place", rerr);
  }
  return Published::kCreated;
}

}  // namespace berth::store::posix
