#include "store/posix_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>

namespace berth::store::posix {
namespace {

// Big enough that system-call overhead vanishes next to hashing, small enough to stay
// in L2/L3 between the read and the hash.
constexpr size_t kChunk = 1u << 20;

// Random per process (getrandom via std::random_device), plus the pid for humans
// reading a directory listing.
const std::string& process_token() {
  static const std::string token = [] {
    std::random_device rd;
    uint64_t r = (uint64_t{rd()} << 32) ^ rd();
    return fmt::format("{}.{:016x}", ::getpid(), r);
  }();
  return token;
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Failure os_error(const std::string& path, std::string_view what, int err) {
  return fail(err == ENOENT ? Errc::kNotFound : Errc::kIo,
              fmt::format("{}: cannot {}: {}", path, what, std::strerror(err)));
}

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

std::string unique_suffix() { return fmt::format("{}.{}", process_token(), temp_counter++); }

Result<Fd> create_temp(const std::string& dir, unsigned mode, std::string* path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    *path = fmt::format("{}/.tmp.{}", dir, unique_suffix());
    int fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) return Fd(fd);
    if (errno != EEXIST) return os_error(*path, "create", errno);
  }
  return fail(Errc::kIo, fmt::format("{}: cannot create a temporary file", dir));
}

Result<void> write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(path, "write", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Ok{};
}

namespace {

// Reads `in` to its end, hashing; the one-thread form, for hashing without a copy.
Result<uint64_t> hash_only(int in, const std::string& in_path, Sha256& hash) {
  std::unique_ptr<char[]> buf(new char[kChunk]);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(in, buf.get(), kChunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(in_path, "read", errno);
    }
    if (n == 0) return total;
    hash.update(buf.get(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
}

}  // namespace

Result<uint64_t> copy_hashing(int in, const std::string& in_path, int out,
                              const std::string& out_path, Sha256& hash) {
  ::posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (out < 0) return hash_only(in, in_path, hash);
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
    uint64_t total = 0;
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
  uint64_t total = 0;
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

Result<void> fsync_fd(int fd, const std::string& path) {
  if (::fsync(fd) != 0) return os_error(path, "fsync", errno);
  return Ok{};
}

Result<void> fsync_dir(const std::string& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.valid()) return os_error(dir, "open directory", errno);
  // Some filesystems refuse fsync on a directory (EINVAL); nothing more can be done.
  if (::fsync(d.get()) != 0 && errno != EINVAL) return os_error(dir, "fsync", errno);
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
    bool no_links = err == EPERM || err == EXDEV || err == ENOTSUP || err == EOPNOTSUPP ||
                    err == EMLINK || err == ENOSYS;
    if (!no_links) {
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
  // Last resort, with the window the seed describes: two writers can both see the slot
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

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace berth::store::posix
