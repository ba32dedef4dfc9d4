// tree: reading the node's kernel files under a root directory.
//
// Every file topo reads (sysfs, procfs, /dev) is named by its absolute path and read
// under a root: "/" on the real node, a temporary directory laid out like "/" in
// tests and with `--sysfs-root DIR`. That root is the seam that lets every reader be
// tested with a fake tree instead of a machine. Internal to topo.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::topo::tree {

// Kernel files are small; a sysfs attribute is at most a page, and a cpulist for
// 64K CPUs is under 400 KiB. Anything larger is not the file we meant to read.
inline constexpr size_t kMaxKernelFileBytes = 1024 * 1024;
// No directory topo lists (CPUs, GPUs, kfd nodes, /dev) legitimately holds more.
inline constexpr size_t kMaxDirEntries = 100000;

// `abs_path` ("/sys/...") under `root` ("/" or "/tmp/x"): "/tmp/x/sys/...".
std::string under(const std::string& root, std::string_view abs_path);

// The file's content, or nullopt when it does not exist (ENOENT, ENOTDIR). Other
// failures (a directory, a read error, over `max_bytes`) are errors naming the path.
Result<std::optional<std::string>> read_optional(const std::string& path,
                                                 size_t max_bytes = kMaxKernelFileBytes);

// The names in a directory, sorted, without "." and ".."; nullopt when it does not
// exist. More than kMaxDirEntries is an error naming the path.
Result<std::optional<std::vector<std::string>>> list_dir(const std::string& path);

bool is_dir(const std::string& path);

// "/proc/meminfo" when root is "/", "/proc/meminfo under /tmp/x" otherwise: how a
// path is shown in provenance and messages, so that a fake tree is never mistaken for
// the node.
std::string shown(const std::string& root, std::string_view abs_path);

}  // namespace berth::topo::tree
