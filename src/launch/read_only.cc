// Read-only paths (read_only.h). The child's half is in spawn.cc, step g'.
#include "launch/read_only.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "launch/spawn.h"

namespace berth::launch {

namespace {

// The mount flags a read-only remount must keep, from statvfs's f_flag.
unsigned long locked_flags(unsigned long st) {
  unsigned long f = 0;
  if (st & ST_NOSUID) f |= MS_NOSUID;
  if (st & ST_NODEV) f |= MS_NODEV;
  if (st & ST_NOEXEC) f |= MS_NOEXEC;
  if (st & ST_NOATIME) f |= MS_NOATIME;
  if (st & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (st & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

}  // namespace

Result<ReadOnlyPaths> plan_read_only(std::vector<std::string> paths, bool user_ns) {
  ReadOnlyPaths p;
  p.user_ns = user_ns;
  if (user_ns) {
    p.uid_map = fmt::format("{} {} 1\n", ::geteuid(), ::geteuid());
    p.gid_map = fmt::format("{} {} 1\n", ::getegid(), ::getegid());
  }
  p.keep_flags.reserve(paths.size());
  for (const std::string& path : paths) {
    struct statvfs st {};
    if (::statvfs(path.c_str(), &st) != 0) {
      return fail(Errc::kIo, fmt::format("cannot make {} read-only: {}", path, std::strerror(errno)));
    }
    p.keep_flags.push_back(locked_flags(st.f_flag));
  }
  p.paths = std::move(paths);
  return p;
}

namespace {

// Starts `sh -c 'echo x >> FILE'` with FILE read-only: OK when the write failed and the
// file is unchanged; else what went wrong.
Result<void> try_mode(bool user_ns) {
  std::string dir = std::filesystem::temp_directory_path().string();
  std::string file = dir + "/berth-read-only.XXXXXX";
  int fd = ::mkstemp(file.data());
  if (fd < 0) return fail(Errc::kIo, fmt::format("cannot create a file in {}: {}", dir, std::strerror(errno)));
  ::close(fd);
  struct Unlink {
    std::string path;
    ~Unlink() { ::unlink(path.c_str()); }
  } unlink_it{file};
  BERTH_TRY(ReadOnlyPaths plan, plan_read_only({file}, user_ns));
  SpawnRequest req;
  req.argv = {"sh", "-c", "echo x >> \"$1\"", "sh", file};
  req.envp = {"PATH=/usr/bin:/bin"};
  req.read_only = &plan;
  FailureContext ctx;
  ctx.rank = -1;
  BERTH_TRY(Spawned child, Spawner::real().spawn(req, ctx, nullptr));
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (child.pidfd >= 0) ::close(child.pidfd);
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (!ec && size == 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0) return Ok{};
  return fail(Errc::kUnsupported, "a write through a read-only path still reached the file");
}

// What the probe found, once per process: whether it works, and in which mode. Root
// needs no user namespace (and keeps its capabilities without one); a root without
// CAP_SYS_ADMIN, in a container, may still be allowed one, so the other mode is tried
// when the natural one is refused.
struct Probe {
  Result<void> verdict = Ok{};
  bool user_ns = false;
};

const Probe& probe() {
  static const Probe found = [] {
    Probe p;
    p.user_ns = ::geteuid() != 0;
    p.verdict = try_mode(p.user_ns);
    if (!p.verdict.ok()) {
      auto other = try_mode(!p.user_ns);
      if (other.ok()) {
        p.user_ns = !p.user_ns;
        p.verdict = Ok{};
      }
    }
    if (!p.verdict.ok()) {
      p.verdict = fail(Errc::kUnsupported, fmt::format("this node does not let berth make "
                                                       "paths read-only for a step: {}",
                                                       p.verdict.error().message()));
    }
    return p;
  }();
  return found;
}

}  // namespace

Result<ReadOnlyPaths> plan_read_only(std::vector<std::string> paths) {
  if (paths.empty()) return ReadOnlyPaths{};
  return plan_read_only(std::move(paths), probe().user_ns);
}

const Result<void>& read_only_support() { return probe().verdict; }

}  // namespace berth::launch
