#include "util/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>

#include "util/memory.h"

namespace berth::files {
namespace {

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

bool transient_errno(int err) {
  switch (err) {
    case ENOSPC: case EDQUOT: case ESTALE: case EIO: case EACCES: case EPERM: case EROFS:
    case ETIMEDOUT: case EAGAIN: case EBUSY: case ENOTCONN: case EHOSTDOWN: case EHOSTUNREACH:
    case ECONNREFUSED: case ECONNRESET: case ENETDOWN: case ENETUNREACH: case ENOLCK:
    case EMFILE: case ENFILE:
      return true;
    default:
      return false;
  }
}

Failure os_error(const std::string& path, std::string_view what, int err) {
  return fail(err == ENOENT           ? Errc::kNotFound
              : transient_errno(err) ? Errc::kUnavailable
                                     : Errc::kIo,
              fmt::format("{}: cannot {}: {}", path, what, std::strerror(err)));
}

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

TempGuard::~TempGuard() {
  if (!path.empty()) ::unlink(path.c_str());
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) return os_error(path, "open", errno);
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) return os_error(path, "stat", errno);
  if (S_ISDIR(st.st_mode)) return fail(Errc::kIo, fmt::format("{}: is a directory", path));
  // Read in place, sized by the file: a steps file or a report is megabytes, and
  // reading through a buffer and appending copied it two or three times over. One
  // byte more than the size, to see the end (or a file that grew) in the same call.
  std::string out;
  size_t len = 0;
  size_t hint = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  const size_t cap = max_bytes == SIZE_MAX ? max_bytes : max_bytes + 1;
  memory::reserve_populated(out, std::min(hint, cap - 1) + 1);
  out.resize(std::min(hint, cap - 1) + 1);
  for (;;) {
    if (len == out.size()) {
      if (len > max_bytes) {
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: larger than the limit of {} bytes", path, max_bytes));
      }
      out.resize(std::min(std::max(out.size() * 2, size_t{65536}), cap));
    }
    ssize_t n = ::read(f.get(), out.data() + len, out.size() - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(path, "read", errno);
    }
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  if (len > max_bytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: larger than the limit of {} bytes", path, max_bytes));
  }
  out.resize(len);
  return out;
}

Result<std::string> write_temp(const std::string& dir, std::string_view data, unsigned mode,
                               bool sync) {
  std::string tmp;
  BERTH_TRY(Fd f, create_temp(dir, mode, &tmp));
  TempGuard guard{tmp};
  BERTH_CHECK(write_all(f.get(), data.data(), data.size(), tmp));
  if (sync) BERTH_CHECK(fsync_fd(f.get(), tmp));
  guard.disarm();
  return tmp;
}

Result<void> write_file_atomic(const std::string& path, std::string_view data, bool sync,
                               unsigned mode) {
  BERTH_TRY(std::string tmp, write_temp(parent_dir(path), data, mode, sync));
  TempGuard guard{tmp};
  if (::rename(tmp.c_str(), path.c_str()) != 0) return os_error(path, "rename onto", errno);
  guard.disarm();
  return Ok{};
}

SharedBytes share_string(std::string bytes) {
  auto held = std::make_shared<const std::string>(std::move(bytes));
  return SharedBytes(new std::string_view(*held), [held](const std::string_view* v) { delete v; });
}

Result<SharedBytes> map_file(const std::string& path, size_t size) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) return os_error(path, "open", errno);
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) return os_error(path, "stat", errno);
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != size) {
    return fail(Errc::kInvalidInput, fmt::format("{}: is not a file of {} bytes", path, size));
  }
  if (size == 0) return share_string("");
  void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.get(), 0);
  if (at == MAP_FAILED) return os_error(path, "map", errno);
  return SharedBytes(new std::string_view(static_cast<const char*>(at), size),
                     [at, size](const std::string_view* v) {
                       ::munmap(at, size);
                       delete v;
                     });
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string unique_suffix() { return fmt::format("{}.{}", process_token(), temp_counter++); }

std::string temp_path(const std::string& dir) {
  return fmt::format("{}/.tmp.{}", dir, unique_suffix());
}

Result<Fd> create_temp(const std::string& dir, unsigned mode, std::string* path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    *path = temp_path(dir);
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

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace berth::files
