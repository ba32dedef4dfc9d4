// Read-only paths (read_only.h). The child's half is in spawn.cc, step g'.
#include "launch/read_only.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
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

constexpr const char* kChroot =
    "berth's root directory is not a mount point (a chroot), so what it mounted for a "
    "step could reach the host's mounts";

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

// Whether berth's root directory is the root of a mount. Not in a chroot: there the
// child cannot stop what it mounts from propagating to the host's namespace (it can
// change the propagation of a mount root only), so it does not try. A kernel that cannot
// say (before 5.8) is taken at its word when the child tries.
bool root_is_a_mount() {
  struct statx st {};
  if (::statx(AT_FDCWD, "/", AT_STATX_DONT_SYNC, STATX_TYPE, &st) != 0) return true;
  if (!(st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) return true;
  return (st.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

// Each mode tried once per process, at the first question.
const Result<void>& mode_support(bool user_ns) {
  auto tried = [](bool mode) -> Result<void> {
    if (!root_is_a_mount()) return fail(Errc::kUnsupported, kChroot);
    return try_mode(mode);
  };
  static const Result<void> modes[2] = {tried(false), tried(true)};
  return modes[user_ns ? 1 : 0];
}

// What the probe found: whether it works, and in which mode. Root needs no user
// namespace (and keeps its capabilities without one); a root without CAP_SYS_ADMIN, in
// a container, may still be allowed one, so the other mode is taken when the natural
// one is refused.
struct Probe {
  Result<void> verdict = Ok{};
  bool user_ns = false;
};

const Probe& probe() {
  static const Probe found = [] {
    Probe p;
    p.user_ns = ::geteuid() != 0;
    if (mode_support(p.user_ns).ok()) return p;
    if (mode_support(!p.user_ns).ok()) {
      p.user_ns = !p.user_ns;
      return p;
    }
    p.verdict = fail(Errc::kUnsupported, fmt::format("this node does not let berth make "
                                                     "paths read-only for a step: {}",
                                                     mode_support(p.user_ns).error().message()));
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

const Result<void>& read_only_support(bool user_ns) { return mode_support(user_ns); }

}  // namespace berth::launch
