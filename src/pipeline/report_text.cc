// ReportText and the report file writers (report_text.h).
#include "pipeline/report_text.h"

#include <fcntl.h>

#include <filesystem>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "pipeline/report.h"

namespace berth::pipeline {
namespace {

// Writes bytes [from, to) of the file `in` to `out` where it stands, by the kernel
// (sendfile), falling back to read and write where sendfile cannot.
Result<void> send_file(int in, int out, size_t from, size_t to, const std::string& what) {
  auto off = static_cast<off_t>(from);
  const size_t n = to;
  while (static_cast<size_t>(off) < n) {
    ssize_t k = ::sendfile(out, in, &off, n - static_cast<size_t>(off));
    if (k > 0) continue;
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) return fail(Errc::kIo, what + ": ended early");
    if (errno != EINVAL && errno != ENOSYS) return files::os_error(what, "sendfile", errno);
    char buf[1 << 16];
    while (static_cast<size_t>(off) < n) {
      ssize_t got = ::pread(in, buf, std::min(sizeof buf, n - static_cast<size_t>(off)), off);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return fail(Errc::kIo, what + ": ended early");
      BERTH_CHECK(files::write_all(out, buf, static_cast<size_t>(got), what));
      off += got;
    }
  }
  return Ok{};
}

// head, then the steps file (`object_bytes` long) with `overrides` in place, then the
// report's tail, to `out`.
Result<void> write_report_to(int out, std::string_view head, int steps_fd, size_t object_bytes,
                             const std::vector<SettledOverride>& overrides,
                             const std::string& what) {
  BERTH_CHECK(files::write_all(out, head.data(), head.size(), what));
  size_t pos = 0;
  for (const auto& v : overrides) {
    BERTH_CHECK(send_file(steps_fd, out, pos, v.offset, what));
    BERTH_CHECK(files::write_all(out, v.entry.data(), v.entry.size(), what));
    pos = v.offset + v.length;
  }
  BERTH_CHECK(send_file(steps_fd, out, pos, object_bytes, what));
  return files::write_all(out, kReportTail.data(), kReportTail.size(), what);
}

// head, steps and the report's tail, to `out`.
Result<void> write_pieces_to(int out, std::string_view head, std::string_view steps,
                             const std::string& what) {
  BERTH_CHECK(files::write_all(out, head.data(), head.size(), what));
  BERTH_CHECK(files::write_all(out, steps.data(), steps.size(), what));
  return files::write_all(out, kReportTail.data(), kReportTail.size(), what);
}

// Whatever `write` puts into a temporary file beside `path`, renamed over it; the
// directory made first (a pipeline's own, on its first run: report_file.h).
template <typename Write>
Result<void> replace_file(const std::string& path, const Write& write) {
  std::error_code ec;
  std::filesystem::create_directories(files::parent_dir(path), ec);
  std::string tmp;
  BERTH_TRY(files::Fd fd, files::create_temp(files::parent_dir(path), 0644, &tmp));
  files::TempGuard guard{tmp};
  BERTH_CHECK(write(fd.get(), tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return files::os_error(path, "rename onto", errno);
  guard.disarm();
  return Ok{};
}

}  // namespace

Result<void> write_report_file(const std::string& path, std::string_view head, int steps_fd,
                               size_t object_bytes,
                               const std::vector<SettledOverride>& overrides) {
  return replace_file(path, [&](int fd, const std::string& what) {
    return write_report_to(fd, head, steps_fd, object_bytes, overrides, what);
  });
}

Result<void> write_pieces_file(const std::string& path, std::string_view head,
                               std::string_view steps) {
  return replace_file(path, [&](int fd, const std::string& what) {
    return write_pieces_to(fd, head, steps, what);
  });
}

Result<void> ReportText::write(int fd, const std::string& what) const {
  if (mapped) {
    BERTH_TRY(std::string text, json());
    return files::write_all(fd, text.data(), text.size(), what);
  }
  if (file.empty()) return write_pieces_to(fd, head, steps, what);
  files::Fd steps_fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!steps_fd.valid()) return files::os_error(file, "open", errno);
  return write_report_to(fd, head, steps_fd.get(), file_bytes, overrides, what);
}

Result<std::string> ReportText::json() const {
  std::string spliced;
  if (mapped) {
    BERTH_TRY(spliced, splice_overrides(*mapped, overrides));
  } else if (!file.empty()) {
    BERTH_TRY(std::string object, files::read_file(file, file_bytes + 1));
    if (object.size() != file_bytes) {
      return fail(Errc::kIo, file + ": not the " + std::to_string(file_bytes) + " bytes expected");
    }
    BERTH_TRY(spliced, splice_overrides(object, overrides));
  }
  const std::string& s = mapped || !file.empty() ? spliced : steps;
  std::string out;
  out.reserve(head.size() + s.size() + kReportTail.size());
  out.append(head).append(s).append(kReportTail);
  return out;
}

}  // namespace berth::pipeline
