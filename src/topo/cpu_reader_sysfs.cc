// SysfsCpuReader: the CPU topology as sysfs lays it out, under a root directory.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "topo/cpu_reader.h"
#include "topo/tree.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

constexpr std::string_view kCpuDir = "/sys/devices/system/cpu";

// Reads and parses a CPU list file; nullopt when it does not exist.
Result<std::optional<std::vector<int>>> read_list(const std::string& root,
                                                  const std::string& abs_path) {
  BERTH_TRY(std::optional<std::string> text, tree::read_optional(tree::under(root, abs_path)));
  if (!text) return std::optional<std::vector<int>>();
  // sysfs ends every file with one newline ("0-3\n"; "\n" for an empty list); the list
  // itself has no blanks, which the codec refuses.
  std::string_view list = *text;
  if (!list.empty() && list.back() == '\n') list.remove_suffix(1);
  auto ids = idset::parse_ids(list);
  if (!ids.ok()) return ids.error().with_context(tree::shown(root, abs_path));
  return std::optional<std::vector<int>>(std::move(ids).value());
}

// The cpu<N> directories, for a tree without an `online` file.
Result<std::vector<int>> listed_cpus(const std::string& root) {
  BERTH_TRY(auto names, tree::list_dir(tree::under(root, kCpuDir)));
  std::vector<int> ids;
  if (!names) return ids;
  for (const std::string& n : *names) {
    if (n.size() < 4 || n.compare(0, 3, "cpu") != 0) continue;
    auto id = str::parse_uint(std::string_view(n).substr(3), idset::kMaxCpuId);
    if (id.ok()) ids.push_back(static_cast<int>(*id));  // "cpufreq", "cpuidle" are not CPUs
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

Result<CpuReading> SysfsCpuReader::read() const {
  CpuReading r;
  BERTH_TRY(auto online, read_list(root_, std::string(kCpuDir) + "/online"));
  if (online) {
    r.online = std::move(*online);
  } else {
    BERTH_TRY(r.online, listed_cpus(root_));
  }
  if (affinity_) {
    r.source = fmt::format("{}, affinity from --affinity", tree::shown(root_, kCpuDir));
    std::vector<int> offline;
    for (int id : *affinity_) {
      // An affinity naming CPUs the node does not have would place work on nothing.
      if (r.online.empty() || std::binary_search(r.online.begin(), r.online.end(), id)) {
        r.allowed.push_back(id);
      } else {
        offline.push_back(id);
      }
    }
    if (!offline.empty()) {
      r.diagnostics.push_back(
          fmt::format("the affinity names CPUs {} that are not online; they are left out",
                      idset::encode_ids(offline)));
    }
  } else {
    r.source = fmt::format("{}, affinity: every online CPU", tree::shown(root_, kCpuDir));
    r.allowed = r.online;
  }
  if (r.allowed.empty()) {
    return fail(Errc::kNotFound,
                fmt::format("{}: no CPUs this process may use (no `online` file, no cpu<N> "
                            "directories, or an empty affinity)",
                            tree::shown(root_, kCpuDir)));
  }

  std::set<int> wanted(r.allowed.begin(), r.allowed.end());
  wanted.insert(r.online.begin(), r.online.end());
  bool self_missing = false;
  for (int id : wanted) {
    std::string topo = fmt::format("{}/cpu{}/topology/", kCpuDir, id);
    // core_cpus_list is the current name; thread_siblings_list the deprecated one that
    // every kernel since 2.6 still writes.
    BERTH_TRY(auto list, read_list(root_, topo + "core_cpus_list"));
    if (!list) {
      BERTH_TRY(list, read_list(root_, topo + "thread_siblings_list"));
    }
    if (!list) continue;
    if (!std::binary_search(list->begin(), list->end(), id)) {
      self_missing = true;
      list->insert(std::lower_bound(list->begin(), list->end(), id), id);
    }
    r.siblings[id] = std::move(*list);
  }
  if (self_missing) {
    r.diagnostics.push_back("a sibling list under " + tree::shown(root_, kCpuDir) +
                            " does not name its own CPU; the CPU was added to it");
  }
  return r;
}

}  // namespace berth::topo
