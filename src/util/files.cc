#include "util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace berth::files {
namespace {

Failure os_error(const std::string& path, const char* what, int err) {
  return fail(err == ENOENT ? Errc::kNotFound : Errc::kIo,
              fmt::format("{}: cannot {}: {}", path, what, std::strerror(err)));
}

// Closes a descriptor on every return path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return os_error(path, "open", errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return os_error(path, "stat", errno);
  if (S_ISDIR(st.st_mode)) return fail(Errc::kIo, fmt::format("{}: is a directory", path));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(path, "read", errno);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: larger than the limit of {} bytes", path, max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<void> write_file_atomic(const std::string& path, std::string_view data, bool sync) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) return os_error(tmp, "create", errno);
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(f.fd, data.data() + off, data.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::unlink(tmp.c_str());
        return os_error(tmp, "write", err);
      }
      off += static_cast<size_t>(n);
    }
    if (sync && ::fsync(f.fd) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return os_error(tmp, "fsync", err);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return os_error(path, "rename onto", err);
  }
  return Ok{};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace berth::files
