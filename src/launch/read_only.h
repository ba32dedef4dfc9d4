// Read-only paths: a launched program that cannot write through some paths, whatever
// their permissions and whoever it runs as (spec 03 §1, step g'; spec 04 §7.4).
//
// The pipeline stages a step's inputs as links to the user's files and to stored
// objects. A link is free, and so is writing through it: `>> in/data.csv` would change
// the user's original, or a stored object every other result shares. So the child of
// spawn() enters a mount namespace of its own and bind-mounts each such path onto
// itself, read-only. There, and only there, a write through the path — or through any
// other name of the same file — fails with EROFS; the file, every other process's view
// of it, and the cost of staging (no copy, whatever the size) are unchanged.
//
// A berth that is not root first enters a user namespace of its own, with its uid and
// gid mapped to themselves: the ids the program sees, and those files, signals and
// sockets see, are the same ones. Where the kernel does not allow that (user
// namespaces disabled, a container's seccomp, an AppArmor policy that takes the
// capabilities away) or berth runs in a chroot (whose root is not a mount, so the
// child could not keep its mounts from propagating), read_only_support() says why, and
// the caller stages without the protection and says so.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace berth::launch {

// What the child does, built by the parent (everything allocated before the child
// exists). Empty `paths`: nothing, no namespace.
struct ReadOnlyPaths {
  bool user_ns = false;             // enter a user namespace first (berth is not root)
  std::string uid_map, gid_map;     // "<uid> <uid> 1\n": written for a user namespace
  std::vector<std::string> paths;   // each bind-mounted onto itself, then made read-only
  // Per path, the flags its read-only remount keeps from the mount it is on (nosuid,
  // nodev, noexec, the atime mode): in a user namespace those are locked, and a remount
  // that dropped one would be refused.
  std::vector<unsigned long> keep_flags;

  bool empty() const { return paths.empty(); }
};

// The plan for making `paths` read-only in a child: the flags of the mount each path
// is on (symlinks followed), and whether a user namespace is needed. Fails naming a
// path that cannot be looked at.
Result<ReadOnlyPaths> plan_read_only(std::vector<std::string> paths);
// The same in the mode given rather than the one read_only_support() found (tests).
Result<ReadOnlyPaths> plan_read_only(std::vector<std::string> paths, bool user_ns);

// Whether a child can be given read-only paths on this node: tried once per process,
// by starting a real program with a file of its own made read-only, and remembered.
// OK, or kUnsupported saying what the kernel refused.
const Result<void>& read_only_support();
// Whether the given mode works here, whichever the probe took (tests).
const Result<void>& read_only_support(bool user_ns);

}  // namespace berth::launch
