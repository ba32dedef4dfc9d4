// bench_store [SIZE_MIB] [DIR] [ROUNDS]: times FileStore's streamed put and verified gets
// of one large file against `openssl dgst -sha256` of the same file, and prints the
// ratios.
//
// The hash is the limit (spec 05 §5: every read verifies), so the target is that each
// store operation runs at >= 0.9x the speed of openssl hashing the file. The file
// (default 1024 MiB, in DIR, default /tmp) is made, read once so that every timing
// sees the page cache, and deleted at the end with the store.
//
// On a shared machine the speed drifts by more than the 10% being measured, so the
// operations are interleaved: each of ROUNDS (default 5) rounds runs openssl and then
// every store operation once, and each line is rated by its best round, so that a slow
// stretch of the machine costs every line alike. Beside wall time each line reports the
// CPU seconds it used (user + system; for openssl, of the process), which noise from
// other tenants moves much less than wall time.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "store/file_store.h"

extern char** environ;

namespace {

using berth::store::FileStore;
using Clock = std::chrono::steady_clock;

struct Sample {
  double wall = 0, cpu = 0;
};

double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// One timed call of f; the CPU time of this process (every thread) or, with children,
// of the processes it waited for. Returns wall < 0 when f failed.
Sample timed(bool children, const std::function<bool()>& f) {
  int who = children ? RUSAGE_CHILDREN : RUSAGE_SELF;
  double c0 = cpu_seconds(who);
  auto t0 = Clock::now();
  bool ok = f();
  Sample s{std::chrono::duration<double>(Clock::now() - t0).count(), cpu_seconds(who) - c0};
  if (!ok) s.wall = -1;
  return s;
}

// `openssl dgst -sha256 PATH`, stdout to /dev/null, no shell in between.
bool openssl_dgst(const std::string& path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {"openssl", "dgst", "-sha256", path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "openssl", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool make_file(const std::string& path, size_t mib) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  std::vector<uint64_t> buf((1u << 20) / 8);
  uint64_t x = 88172645463325252ull;
  for (size_t m = 0; m < mib; ++m) {
    for (auto& w : buf) {  // xorshift64: incompressible, cheap
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w = x;
    }
    if (::write(fd, buf.data(), 1u << 20) != (1 << 20)) return false;
  }
  return ::close(fd) == 0;
}

// A line of the table: its operation, and what every round measured.
struct Line {
  Line(const char* w, bool c, std::function<bool()> r, std::function<void()> p = {})
      : what(w), children(c), run(std::move(r)), prepare(std::move(p)) {}
  const char* what;
  bool children;  // a process (openssl) rather than this one
  std::function<bool()> run;
  // Untimed, before each run: removes the previous round's output. Freeing a 1 GiB
  // file is the previous round's cleanup, not this operation, and on a VM that hands
  // freed pages back to its host it costs seconds.
  std::function<void()> prepare;
  std::vector<Sample> samples;
  bool failed = false;
  Sample best() const {
    Sample b{1e30, 0};
    for (const auto& s : samples) {
      if (s.wall < b.wall) b = s;
    }
    return b;
  }
  double median_wall() const {
    std::vector<double> w;
    for (const auto& s : samples) w.push_back(s.wall);
    std::sort(w.begin(), w.end());
    return w.empty() ? 0 : w[w.size() / 2];
  }
};

}  // namespace

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  std::string base = argc > 2 ? argv[2] : "/tmp";
  int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  std::string work = base + "/berth-bench-store." + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  std::string input = work + "/input";
  if (!make_file(input, mib)) {
    std::fprintf(stderr, "bench_store: cannot write %s\n", input.c_str());
    return 2;
  }
  if (!openssl_dgst(input)) {  // also warms the page cache
    std::fprintf(stderr, "bench_store: openssl dgst -sha256 failed (apt-get install openssl)\n");
    return 2;
  }
  // The object every get reads: put once before the rounds, into a store of its own so
  // that the put lines can remove theirs.
  auto store = FileStore::open(work + "/store");
  if (!store.ok()) return 2;
  auto& s = **store;
  auto put = s.put_object_file(input);
  if (!put.ok()) {
    std::fprintf(stderr, "bench_store: put: %s\n", put.error().message().c_str());
    return 2;
  }
  std::string name = *put;
  auto put_into = [&](bool sync) {
    FileStore::Options o;
    o.fsync_objects = sync;
    auto p = FileStore::open(work + "/put", o);
    if (!p.ok()) return false;
    auto n = (*p)->put_object_file(input);
    return n.ok() && *n == name;
  };

  std::vector<Line> lines;
  lines.emplace_back("openssl dgst -sha256", true, [&] { return openssl_dgst(input); });
  auto remove_put = [&] { std::filesystem::remove_all(work + "/put"); };
  lines.emplace_back("put_object_file (fsync)", false, [&] { return put_into(true); }, remove_put);
  lines.emplace_back("put_object_file (no fsync)", false, [&] { return put_into(false); },
                     remove_put);
  lines.emplace_back(
      "get_object_to_file (verified)", false,
      [&] {
        auto r = s.get_object_to_file(name, work + "/copy");
        return r.ok() && r->present();
      },
      [&] { std::filesystem::remove(work + "/copy"); });
  lines.emplace_back("get_object (verified, in memory)", false, [&] {
                     auto r = s.get_object(name);
                     return r.ok() && r->present();
                   });
  lines.emplace_back("materialize (hard link, verified)", false, [&] {
                     std::filesystem::remove(work + "/linked");
                     auto r = s.materialize(name, work + "/linked");
                     return r.ok() && r->present() && r->linked;
                   });
  for (int round = 0; round < rounds; ++round) {
    for (auto& l : lines) {
      if (l.failed) continue;
      if (l.prepare) l.prepare();
      Sample t = timed(l.children, l.run);
      if (t.wall < 0) {
        l.failed = true;
      } else {
        l.samples.push_back(t);
      }
    }
  }

  std::printf("bench_store: %zu MiB in %s, %d interleaved rounds, best round of each\n", mib,
              work.c_str(), rounds);
  std::printf("%-34s %8s %8s %8s %7s %7s %8s\n", "", "best s", "median s", "MiB/s", "cpu s",
              "x wall", "x cpu");
  Sample ref = lines[0].best();
  int failures = 0;
  for (const auto& l : lines) {
    if (l.failed || l.samples.empty()) {
      std::printf("%-34s failed\n", l.what);
      ++failures;
      continue;
    }
    Sample b = l.best();
    double ratio = ref.wall / b.wall;
    std::printf("%-34s %8.3f %8.3f %8.0f %7.3f %7.2f %8.2f%s\n", l.what, b.wall,
                l.median_wall(), static_cast<double>(mib) / b.wall, b.cpu, ratio,
                ref.cpu / b.cpu, &l == &lines[0] || ratio >= 0.9 ? "" : "   (below 0.9x)");
  }
  std::printf("x wall: openssl's best wall time over the line's (>= 1 is faster; target >= 0.9)\n"
              "x cpu: openssl's CPU seconds over the line's\n");
  std::filesystem::remove_all(work);
  if (failures > 0) {
    std::fprintf(stderr, "bench_store: %d operations failed\n", failures);
    return 1;
  }
  return 0;
}
