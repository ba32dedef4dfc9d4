#include "topo/memory.h"

#include <fmt/format.h>

#include <algorithm>

#include "topo/tree.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
// cgroup v1 writes "unlimited" as the largest page-aligned signed 64-bit count
// (9223372036854771712); anything this large is no limit on any real machine.
constexpr uint64_t kUnlimitedBytes = uint64_t{1} << 62;
// A cgroup path longer than PATH_MAX is not one the kernel wrote.
constexpr size_t kMaxCgroupPath = 4096;
// No node has an exabyte; a scheduler figure over 2^40 MB is corruption.
constexpr uint64_t kMaxMb = uint64_t{1} << 40;

Failure line_error(size_t line_no, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("line {}: {}", line_no, what));
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out += static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// A path from /proc/self/cgroup that is safe to put under the root: absolute, with
// no ".." (a fake tree must not be able to send a reader outside it).
Result<void> check_cgroup_path(std::string_view p) {
  if (p.empty() || p[0] != '/') {
    return fail(Errc::kInvalidInput,
                fmt::format("cgroup path '{}' is not absolute", str::printable(p)));
  }
  if (p.size() > kMaxCgroupPath) {
    return fail(Errc::kInvalidInput,
                fmt::format("cgroup path is longer than {} bytes", kMaxCgroupPath));
  }
  for (std::string_view part : str::split(p, '/')) {
    if (part == "..") {
      return fail(Errc::kInvalidInput,
                  fmt::format("cgroup path '{}' contains '..'", str::printable(p)));
    }
  }
  if (p.find('\0') != std::string_view::npos) {
    return fail(Errc::kInvalidInput, "cgroup path contains a NUL byte");
  }
  return Ok{};
}

// The binding cgroup limit: the smallest along the path, with where it was read.
struct Limit {
  uint64_t bytes = 0;
  std::string shown;
};

Result<std::optional<Limit>> cgroup_limit(const std::string& root, const CgroupPaths& paths,
                                          const std::vector<CgroupMount>& mounts) {
  // On a hybrid system the unified hierarchy is mounted but memory is a v1
  // controller, so a v1 memory line wins when there is one.
  bool v2 = !paths.v1_memory;
  const std::optional<std::string>& path = v2 ? paths.v2 : paths.v1_memory;
  if (!path) return std::optional<Limit>();
  BERTH_CHECK(check_cgroup_path(*path));
  const char* file = v2 ? "memory.max" : "memory.limit_in_bytes";

  // The mount whose root contains the path; a cgroup namespace mounts its own root.
  CgroupMount mount{v2, "/", v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory"};
  bool found = false;
  for (const CgroupMount& m : mounts) {
    if (m.v2 != v2) continue;
    bool inside = m.root == "/" || *path == m.root ||
                  (path->size() > m.root.size() && path->compare(0, m.root.size(), m.root) == 0 &&
                   (*path)[m.root.size()] == '/');
    if (!found || inside) {
      mount = m;
      found = true;
      if (inside) break;
    }
  }
  std::string rel = *path;
  if (mount.root != "/" && rel.compare(0, mount.root.size(), mount.root) == 0) {
    rel = rel.substr(mount.root.size());
  }
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  if (mount.mount_point.empty() || mount.mount_point[0] != '/') {
    return fail(Errc::kInvalidInput, fmt::format("cgroup mount point '{}' is not absolute",
                                                 str::printable(mount.mount_point)));
  }

  std::optional<Limit> best;
  // From the process's own cgroup up to the mount root, inclusive.
  for (;;) {
    std::string abs = mount.mount_point + rel + "/" + file;
    BERTH_TRY(auto text, tree::read_optional(tree::under(root, abs), 4096));
    if (text) {
      auto limit = parse_cgroup_limit(*text);
      if (!limit.ok()) return limit.error().with_context(tree::shown(root, abs));
      if (*limit && (!best || **limit < best->bytes)) {
        best = Limit{**limit, fmt::format("cgroup {} {} ({})", v2 ? "v2" : "v1", file,
                                          tree::shown(root, abs))};
      }
    }
    if (rel.empty()) break;
    rel.resize(rel.rfind('/'));
  }
  return best;
}

Result<std::optional<uint64_t>> env_mb(const Env& env, std::string_view name) {
  BERTH_TRY(auto v, env.get_bounded(name));
  if (!v) return std::optional<uint64_t>();
  auto n = str::parse_uint(str::trim(*v), kMaxMb);
  if (!n.ok()) return n.error().with_context(std::string(name));
  return std::optional<uint64_t>(*n);
}

}  // namespace

Result<std::optional<int64_t>> parse_meminfo_total_kb(std::string_view text) {
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    auto f = str::split_ws(line);
    if (f.empty() || f[0] != "MemTotal:") continue;
    if (f.size() < 2 || f.size() > 3 || (f.size() == 3 && f[2] != "kB")) {
      return line_error(line_no,
                        fmt::format("expected 'MemTotal: N kB', found '{}'", str::printable(line)));
    }
    auto kb = str::parse_uint(f[1], INT64_MAX / 1024);
    if (!kb.ok()) return kb.error().with_context(fmt::format("line {}: MemTotal", line_no));
    return std::optional<int64_t>(static_cast<int64_t>(*kb));
  }
  return std::optional<int64_t>();
}

Result<CgroupPaths> parse_proc_cgroup(std::string_view text) {
  CgroupPaths out;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    if (str::trim(line).empty()) continue;
    size_t a = line.find(':');
    size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) {
      return line_error(
          line_no, fmt::format("expected ID:CONTROLLERS:PATH, found '{}'", str::printable(line)));
    }
    std::string_view id = line.substr(0, a);
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string_view path = line.substr(b + 1);  // a path may itself contain ':'
    if (!str::parse_uint(id, UINT32_MAX).ok()) {
      return line_error(line_no,
                        fmt::format("hierarchy id '{}' is not a number", str::printable(id)));
    }
    if (id == "0" && controllers.empty()) {
      out.v2 = std::string(path);
      continue;
    }
    for (std::string_view c : str::split(controllers, ',')) {
      if (c == "memory") out.v1_memory = std::string(path);
    }
  }
  return out;
}

Result<std::vector<CgroupMount>> parse_mountinfo_cgroups(std::string_view text) {
  std::vector<CgroupMount> out;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    auto f = str::split_ws(line);
    if (f.empty()) continue;
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 6 || dash == f.end() || dash - f.begin() < 6 || f.end() - dash < 4) {
      return line_error(line_no,
                        "expected a mountinfo line (fields, ' - ', type, source, "
                        "options)");
    }
    std::string_view fstype = dash[1];
    bool v2 = fstype == "cgroup2";
    bool v1_memory = false;
    if (fstype == "cgroup") {
      for (std::string_view o : str::split(dash[3], ',')) v1_memory |= o == "memory";
    }
    if (!v2 && !v1_memory) continue;
    out.push_back({v2, unescape_octal(f[3]), unescape_octal(f[4])});
  }
  return out;
}

Result<std::optional<uint64_t>> parse_cgroup_limit(std::string_view text) {
  std::string_view t = str::trim(text);
  if (t == "max") return std::optional<uint64_t>();
  auto n = str::parse_uint(t);
  if (!n.ok()) {
    return fail(Errc::kInvalidInput,
                fmt::format("expected a byte count or 'max', found '{}'", str::printable(t)));
  }
  if (*n >= kUnlimitedBytes) return std::optional<uint64_t>();
  return std::optional<uint64_t>(*n);
}

Result<Memory> read_memory(const std::string& root, const Env& env) {
  Memory m;
  std::optional<int64_t> total_kb;
  {
    BERTH_TRY(auto text, tree::read_optional(tree::under(root, "/proc/meminfo")));
    if (text) {
      auto kb = parse_meminfo_total_kb(*text);
      if (!kb.ok()) return kb.error().with_context(tree::shown(root, "/proc/meminfo"));
      total_kb = *kb;
    }
  }

  // 1. The cgroup limit.
  BERTH_TRY(auto cg_text, tree::read_optional(tree::under(root, "/proc/self/cgroup")));
  if (cg_text) {
    auto paths = parse_proc_cgroup(*cg_text);
    if (!paths.ok()) return paths.error().with_context(tree::shown(root, "/proc/self/cgroup"));
    std::vector<CgroupMount> mounts;
    BERTH_TRY(auto mi_text, tree::read_optional(tree::under(root, "/proc/self/mountinfo")));
    if (mi_text) {
      auto parsed = parse_mountinfo_cgroups(*mi_text);
      if (!parsed.ok()) {
        return parsed.error().with_context(tree::shown(root, "/proc/self/mountinfo"));
      }
      mounts = std::move(parsed).value();
    }
    auto limit = cgroup_limit(root, *paths, mounts);
    if (!limit.ok()) return limit.error().with_context(tree::shown(root, "/proc/self/cgroup"));
    if (*limit) {
      const Limit& l = **limit;
      if (total_kb && l.bytes / 1024 >= static_cast<uint64_t>(*total_kb)) {
        m.diagnostics.push_back(
            fmt::format("{} is {} MB, not below the node's MemTotal; it limits nothing", l.shown,
                        l.bytes / kMiB));
      } else {
        m.mb = static_cast<int64_t>(l.bytes / kMiB);
        m.source = MemorySource::kCgroup;
        m.provenance = l.shown;
        return m;
      }
    }
  }

  // 2. The scheduler's word for the job's memory on this node.
  BERTH_TRY(auto per_node, env_mb(env, "SLURM_MEM_PER_NODE"));
  if (per_node && *per_node > 0) {
    m.mb = static_cast<int64_t>(*per_node);
    m.source = MemorySource::kScheduler;
    m.provenance = "env SLURM_MEM_PER_NODE";
    return m;
  }
  BERTH_TRY(auto per_cpu, env_mb(env, "SLURM_MEM_PER_CPU"));
  BERTH_TRY(auto cpus, env_mb(env, "SLURM_CPUS_ON_NODE"));
  if (per_cpu && cpus && *per_cpu > 0 && *cpus > 0) {
    // Each is at most 2^40, so their product could overflow 64 bits.
    if (*per_cpu > kMaxMb / *cpus) {
      return fail(Errc::kInvalidInput,
                  "SLURM_MEM_PER_CPU times SLURM_CPUS_ON_NODE is larger than any node");
    }
    m.mb = static_cast<int64_t>(*per_cpu * *cpus);
    m.source = MemorySource::kScheduler;
    m.provenance = "env SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE";
    return m;
  }

  // 3. The kernel's figure: the hardware total, which is not what a job may use.
  if (total_kb) {
    m.mb = *total_kb / 1024;
    m.source = MemorySource::kKernel;
    m.provenance = tree::shown(root, "/proc/meminfo") + " MemTotal";
    m.diagnostics.push_back(
        "MemTotal is what the hardware holds, not what a job may use (Aurora's reads "
        "1161578 MB against a site figure of 960000); prefer the machine "
        "description's memory_per_node where it has one");
    return m;
  }
  m.provenance =
      "unknown: no cgroup limit, no scheduler figure, no " + tree::shown(root, "/proc/meminfo");
  m.diagnostics.push_back("this node's usable memory could not be read");
  return m;
}

}  // namespace berth::topo
