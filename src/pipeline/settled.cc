// The settled record's check by stat() (settled.h, spec 04 §7.1): whether every fact a
// record rests on still holds — requests, tools, stamps (racy inputs read again),
// objects — and which steps still stand on what holds.
#include "pipeline/settled.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "util/memory.h"
#include "util/sha256.h"

namespace berth::pipeline {
namespace {

// Directories opened (O_PATH) to stat the files under them by a short relative path:
// a stat's cost is mostly its path walk, one component at a time, and a record's files
// lie under a few directories. A file's parent is opened once a second file under it
// is seen (inputs/ holds many; results/<step>/ one or two), else its grandparent
// (results/ holds every step's). One per thread. At most kMaxOpen are held: a process
// holding hundreds grows its descriptor table, and a table shared by threads grows only
// after an RCU grace period each time it doubles (milliseconds each, on the first
// check's critical path); past that, a path is walked whole.
class DirCache {
 public:
  DirCache() = default;
  DirCache(const DirCache&) = delete;
  DirCache& operator=(const DirCache&) = delete;
  ~DirCache() {
    for (auto* m : {&parents_, &grandparents_}) {
      for (auto& [dir, fd] : *m) {
        if (fd >= 0) ::close(fd);
      }
    }
  }
  Result<FileStamp> stamp(const std::string& path) {
    size_t last = path.rfind('/');
    if (last == std::string::npos || last == 0 || last + 1 == path.size()) {
      return FileStamp::of(path);
    }
    std::string_view parent(path.data(), last);
    auto p = parents_.find(parent);
    if (p == parents_.end()) {
      if (parents_.size() < kMaxDirs) parents_.emplace(std::string(parent), kSeenOnce);
    } else {
      if (p->second == kSeenOnce) p->second = open_dir(parent);
      if (p->second >= 0) return FileStamp::at(p->second, path.c_str() + last + 1);
    }
    size_t cut = path.rfind('/', last - 1);
    // A short path walks little anyway; an empty component is left to stat.
    if (cut == std::string::npos || cut == 0 || cut + 1 == last) return FileStamp::of(path);
    std::string_view grand(path.data(), cut);
    auto g = grandparents_.find(grand);
    if (g == grandparents_.end()) {
      if (grandparents_.size() >= kMaxDirs) return FileStamp::of(path);
      g = grandparents_.emplace(std::string(grand), open_dir(grand)).first;
    }
    if (g->second < 0) return FileStamp::of(path);
    return FileStamp::at(g->second, path.c_str() + cut + 1);
  }

 private:
  static constexpr size_t kMaxDirs = 1024;
  static constexpr int kMaxOpen = 16;
  static constexpr int kSeenOnce = -2;
  int open_dir(std::string_view dir) {
    if (open_ >= kMaxOpen) return -1;
    int fd = ::open(std::string(dir).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) ++open_;
    return fd;
  }
  int open_ = 0;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Dirs = std::unordered_map<std::string, int, Hash, std::equal_to<>>;
  Dirs parents_;       // kSeenOnce, an open directory, or -1 (could not be opened)
  Dirs grandparents_;  // an open directory, or -1
};

// Whether one file still has its stamp; a racy input, and still its bytes (read again,
// then stamped again: a write while it was read is a difference).
bool file_holds(const SettledFile& f, DirCache& dirs, std::atomic<size_t>& racy_verified) {
  auto st = dirs.stamp(f.path);
  if (!st.ok()) return false;
  if (!f.with_ctime) st->ctime_ns = 0;
  if (*st != f.stamp) return false;
  if (f.racy_hash.empty()) return true;
  auto h = sha256_file(f.path);
  if (!h.ok() || *h != f.racy_hash) return false;
  auto after = FileStamp::of(f.path);
  if (!after.ok() || *after != f.stamp) return false;
  racy_verified.fetch_add(1, std::memory_order_relaxed);
  return true;
}


}  // namespace

bool SettledCheck::holds(const SettledStep& e) const {
  for (uint32_t f : e.files) {
    if (f >= file_ok.size() || !file_ok[f]) return false;
  }
  for (uint32_t o : e.objects) {
    if (o >= object_ok.size() || !object_ok[o]) return false;
  }
  return true;
}

SettledCheck check_settled(const Settled& s, const std::vector<place::PoolNode>& nodes,
                           store::ObjectStore& store, place::VersionProbe& probe,
                           bool stop_at_first) {
  SettledCheck c;
  for (const auto& q : s.requests) {
    place::Pool empty(nodes);
    place::Request req;
    req.tasks = q.tasks;
    req.cpus_per_task = q.cpus_per_task;
    req.gpus = q.gpus;
    if (q.nodes >= 0) req.nodes = q.nodes;
    auto g = empty.grant(req);
    if (!g.ok() || !g->has_value()) {
      c.requests_fit = false;
      c.difference = "a step no longer fits the pool";
      if (stop_at_first) return c;
      break;
    }
  }
  for (const auto& t : s.tools) {
    auto out = probe.run(t.argv);
    if (!out.ok() || *out != t.output) {
      c.tools_same = false;
      if (!c.difference) {
        c.difference =
            fmt::format("tool '{}' answers differently", t.argv.empty() ? "" : t.argv[0]);
      }
      if (stop_at_first) return c;
      break;
    }
  }
  // Files, then objects, as one list split in two halves: one checked here, one on a
  // second thread. With stop_at_first the first difference stops both.
  size_t nf = s.files.size();
  size_t n = nf + s.objects.size();
  c.file_ok.assign(nf, 0);
  c.object_ok.assign(s.objects.size(), 0);
  std::atomic<bool> differs{false};
  std::atomic<size_t> first{SIZE_MAX};
  std::atomic<size_t> racy{0};
  auto note = [&](size_t i) {
    differs = true;
    size_t seen = first.load();
    while (i < seen && !first.compare_exchange_weak(seen, i)) {
    }
  };
  auto check = [&](size_t from, size_t to) {
    DirCache dirs;
    for (size_t i = from; i < std::min(to, nf); ++i) {
      if (stop_at_first && differs.load(std::memory_order_relaxed)) return;
      c.file_ok[i] = file_holds(s.files[i], dirs, racy);
      if (!c.file_ok[i]) note(i);
    }
    if (to <= nf) return;
    size_t a = std::max(from, nf) - nf, b = to - nf;
    if (stop_at_first) {
      for (size_t k = a; k < b && !differs.load(std::memory_order_relaxed); ++k) {
        auto has = store.has_object(s.objects[k]);
        c.object_ok[k] = has.ok() && *has;
        if (!c.object_ok[k]) note(nf + k);
      }
      return;
    }
    // Every one, as one question to the store.
    store.has_objects(std::span<const std::string>(s.objects).subspan(a, b - a),
                      std::span<char>(c.object_ok).subspan(a, b - a));
    for (size_t k = a; k < b; ++k) {
      if (!c.object_ok[k]) note(nf + k);
    }
  };
  size_t half = n / 2;
  std::thread other;
  if (n >= 64) other = std::thread(check, size_t{0}, half);
  check(other.joinable() ? half : 0, n);
  if (other.joinable()) other.join();
  c.racy_verified = racy.load();
  if (!differs || c.difference) return c;
  size_t i = first.load();
  if (i < nf) {
    c.difference = fmt::format("{} changed", s.files[i].path);
  } else {
    c.difference = fmt::format("object {} is no longer in the store", s.objects[i - nf]);
  }
  return c;
}

bool settle_racy_inputs(Settled& s, int64_t now_ns) {
  bool turned = false;
  for (auto& f : s.files) {
    if (f.racy_hash.empty() || stamp_is_racy(f.stamp, now_ns)) continue;
    f.racy_hash.clear();
    turned = true;
  }
  return turned;
}

}  // namespace berth::pipeline
