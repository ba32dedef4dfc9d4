// bench_store [SIZE_MIB] [DIR]: times FileStore's streamed put and verified gets of one
// large file against `openssl dgst -sha256` of the same file, and prints the ratios.
//
// The hash is the limit (spec 05 §5: every read verifies), so the target is that each
// store operation runs at >= 0.9x the speed of openssl hashing the file. The file
// (default 1024 MiB, in DIR, default /tmp) is made, read once so that every timing
// sees the page cache, and deleted at the end with the store.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "store/file_store.h"

namespace {

using berth::store::FileStore;
using Clock = std::chrono::steady_clock;

double best_of(int n, const std::function<bool()>& f) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    if (!f()) return -1;
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
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

void row(const char* what, double secs, double openssl, size_t mib) {
  std::printf("%-34s %8.3f s %8.0f MiB/s   %.2fx openssl%s\n", what, secs,
              static_cast<double>(mib) / secs, openssl / secs,
              openssl / secs >= 0.9 ? "" : "   (below 0.9x)");
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  std::string base = argc > 2 ? argv[2] : "/tmp";
  std::string work = base + "/berth-bench-store." + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  std::string input = work + "/input";
  if (!make_file(input, mib)) {
    std::fprintf(stderr, "bench_store: cannot write %s\n", input.c_str());
    return 2;
  }
  std::string cmd = "openssl dgst -sha256 " + input + " >/dev/null";
  (void)std::system(cmd.c_str());  // warm the page cache
  double openssl = best_of(3, [&] { return std::system(cmd.c_str()) == 0; });
  std::printf("bench_store: %zu MiB in %s\n", mib, work.c_str());
  std::printf("%-34s %8.3f s %8.0f MiB/s\n", "openssl dgst -sha256", openssl,
              static_cast<double>(mib) / openssl);

  bool ok = openssl > 0;
  std::string name;
  int failures = 0;
  for (bool sync : {true, false}) {
    FileStore::Options o;
    o.fsync_objects = sync;
    double t = best_of(3, [&] {
      std::filesystem::remove_all(work + "/store");
      auto s = FileStore::open(work + "/store", o);
      if (!s.ok()) return false;
      auto n = (*s)->put_object_file(input);
      if (!n.ok()) return false;
      name = *n;
      return true;
    });
    row(sync ? "put_object_file (fsync)" : "put_object_file (no fsync)", t, openssl, mib);
    if (t < 0) ++failures;
  }
  auto store = FileStore::open(work + "/store");
  if (!store.ok()) return 2;
  auto& s = **store;
  double get_file = best_of(3, [&] {
    auto r = s.get_object_to_file(name, work + "/copy");
    return r.ok() && r->present();
  });
  row("get_object_to_file (verified)", get_file, openssl, mib);
  double get_mem = best_of(3, [&] {
    auto r = s.get_object(name);
    return r.ok() && r->present();
  });
  row("get_object (verified, in memory)", get_mem, openssl, mib);
  double mat = best_of(3, [&] {
    auto r = s.materialize(name, work + "/linked");
    return r.ok() && r->present() && r->linked;
  });
  row("materialize (hard link, verified)", mat, openssl, mib);
  std::filesystem::remove_all(work);
  for (double t : {get_file, get_mem, mat}) failures += t < 0;
  if (!ok || failures > 0) {
    std::fprintf(stderr, "bench_store: %d operations failed\n", failures);
    return 1;
  }
  return 0;
}
