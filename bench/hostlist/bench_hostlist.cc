// bench_hostlist: berth's hostlist codec against Slurm's own, side by side.
//
//   bench_hostlist [PATH_TO_BERTH]
//
// For each expression it times berth's expand() and compress() in process, checks the
// round trip, and, when `scontrol` is on PATH, times `scontrol show hostnames` on the
// same names (and `scontrol show hostlist FILE` on the compress side), checks that
// Slurm prints exactly berth's names, and prints the ratio. Given a berth binary it
// also times a whole `berth alloc --env-file` discovery of a 10^5-node allocation.
// Plain std::chrono rather than Google Benchmark: half the work is timing other
// processes, and the point is one readable table (bench/README.md).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "alloc/hostlist.h"

namespace {

namespace hostlist = berth::alloc::hostlist;
namespace fs = std::filesystem;

constexpr int kInProcessRuns = 5;
constexpr int kProcessRuns = 3;

// Slurm refuses a single range of more than 65536 names ("Too many hosts in range",
// hostlist.c MAX_RANGE in 22.05), so scontrol gets the same names written as several
// ranges: n[0000001-0065536,0065537-...].
constexpr uint64_t kSlurmMaxRange = 65536;
// It also reads at most 1 MiB of a file of names and drops the rest without a word.
constexpr size_t kSlurmMaxFile = 1'000'000;

// The best of `runs` timings of `fn`, in milliseconds: the minimum is the least noisy
// estimate of what the code costs on a shared machine.
double best_ms(int runs, const std::function<void()>& fn) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `command` under /bin/sh, collecting its stdout; returns the exit status (-1 when
// it could not be started or did not exit normally).
int run(const std::string& command, std::string* out) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
    if (out != nullptr) out->append(buf, n);
  }
  int status = pclose(p);
  return (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "n[0000001-1000000]" written the way Slurm accepts it: ranges of at most
// kSlurmMaxRange names, padded to `width`.
std::string slurm_ranges(std::string_view prefix, uint64_t lo, uint64_t hi, int width) {
  std::string out(prefix);
  out += '[';
  for (uint64_t a = lo; a <= hi; a += kSlurmMaxRange) {
    uint64_t b = std::min(hi, a + kSlurmMaxRange - 1);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%0*llu-%0*llu", a == lo ? "" : ",", width,
                  static_cast<unsigned long long>(a), width, static_cast<unsigned long long>(b));
    out += buf;
  }
  return out + ']';
}

// How this machine's scontrol is invoked, or empty when there is none. scontrol wants a
// configuration even to expand names; without a cluster, a throwaway one suffices.
struct Scontrol {
  std::string command;  // "scontrol" or "SLURM_CONF=/tmp/... scontrol"
  std::string note;
};

Scontrol find_scontrol(const fs::path& tmp) {
  if (run("command -v scontrol >/dev/null 2>&1", nullptr) != 0) return {};
  std::string out;
  if (run("scontrol show hostnames n1 2>/dev/null", &out) == 0 && out == "n1\n") {
    return {"scontrol", "scontrol with this machine's Slurm configuration"};
  }
  fs::path conf = tmp / "slurm.conf";
  std::ofstream(conf) << "ClusterName=bench\nSlurmctldHost=localhost\n";
  std::string cmd = "SLURM_CONF=" + shell_quote(conf.string()) + " scontrol";
  out.clear();
  if (run(cmd + " show hostnames n1 2>/dev/null", &out) == 0 && out == "n1\n") {
    return {cmd, "scontrol with a throwaway slurm.conf (no cluster here)"};
  }
  return {};
}

struct Case {
  std::string expr;        // what berth expands
  std::string slurm_expr;  // the same names, in a form scontrol accepts
};

// Times one case; returns false if berth's own round trip or Slurm's names disagree.
bool bench_case(const Case& c, const Scontrol& sc, const fs::path& tmp) {
  std::printf("\n== %s\n", c.expr.c_str());
  std::vector<std::string> names;
  double expand_ms = best_ms(kInProcessRuns, [&] {
    auto r = hostlist::expand(c.expr);
    if (r.ok()) names = std::move(*r);
  });
  if (names.empty()) {
    std::printf("  berth cannot expand it\n");
    return false;
  }
  std::string compressed;
  double compress_ms = best_ms(kInProcessRuns, [&] { compressed = hostlist::compress(names); });
  auto back = hostlist::expand(compressed);
  bool ok = back.ok() && *back == names;
  std::printf("  names                %zu\n", names.size());
  std::printf("  berth expand         %9.1f ms\n", expand_ms);
  std::printf("  berth compress       %9.1f ms   %zu chars, round trip %s\n", compress_ms,
              compressed.size(), ok ? "ok" : "FAILED");
  if (sc.command.empty()) return ok;

  std::string out;
  int rc = 0;
  std::string cmd = sc.command + " show hostnames " + shell_quote(c.slurm_expr);
  double sc_expand_ms = best_ms(kProcessRuns, [&] {
    out.clear();
    rc = run(cmd + " 2>/dev/null", &out);
  });
  // Slurm orders three or more bracket groups its own way (the last group varies
  // fastest, then the first, second, ...; see hostlist_test.cc), so with those the
  // same names in another order still count as agreement.
  std::vector<std::string> slurm_names = lines(out);
  const char* verdict = "NO";
  if (rc == 0 && slurm_names == names) {
    verdict = "yes";
  } else if (rc == 0 && slurm_names.size() == names.size()) {
    std::vector<std::string> a = names;
    std::sort(a.begin(), a.end());
    std::sort(slurm_names.begin(), slurm_names.end());
    if (a == slurm_names) verdict = "yes, in Slurm's own order";
  }
  bool same = verdict[0] == 'y';
  std::printf("  scontrol hostnames   %9.1f ms   %.1fx berth, same names: %s\n", sc_expand_ms,
              sc_expand_ms / expand_ms, verdict);
  if (c.slurm_expr != c.expr) {
    std::printf("                       (given as %zu ranges: Slurm allows %llu names a range)\n",
                static_cast<size_t>(std::count(c.slurm_expr.begin(), c.slurm_expr.end(), ',')) + 1,
                static_cast<unsigned long long>(kSlurmMaxRange));
  }

  // scontrol compresses a file of names when its argument starts with '/' (10^6 names
  // do not fit on a command line), but it reads only the file's first 1 MiB and
  // silently cuts the rest, so it gets the longest prefix of the names that fits in
  // kSlurmMaxFile bytes. It also sorts them, so its answer is checked as a set.
  std::vector<std::string> head;
  size_t bytes = 0;
  for (const auto& n : names) {
    if (bytes + n.size() + 1 > kSlurmMaxFile) break;
    bytes += n.size() + 1;
    head.push_back(n);
  }
  fs::path file = tmp / "names.txt";
  {
    std::ofstream f(file);
    for (const auto& n : head) f << n << '\n';
  }
  double head_ms = best_ms(kInProcessRuns, [&] { (void)hostlist::compress(head); });
  std::string sc_compressed;
  double sc_compress_ms = best_ms(kProcessRuns, [&] {
    sc_compressed.clear();
    rc = run(sc.command + " show hostlist " + shell_quote(file.string()) + " 2>/dev/null",
             &sc_compressed);
  });
  while (!sc_compressed.empty() && sc_compressed.back() == '\n') sc_compressed.pop_back();
  auto sc_names = hostlist::expand(sc_compressed);
  bool sc_ok = rc == 0 && sc_names.ok() && sc_names->size() == head.size();
  if (sc_ok) {
    std::sort(head.begin(), head.end());
    std::sort(sc_names->begin(), sc_names->end());
    sc_ok = *sc_names == head;
  }
  std::printf("  scontrol hostlist    %9.1f ms   %.1fx berth (%.1f ms), first %zu names, %s\n",
              sc_compress_ms, sc_compress_ms / head_ms, head_ms, head.size(),
              sc_ok ? "same set" : "WRONG");
  return ok && same && sc_ok;
}

// A whole process's cost: wall milliseconds, and the CPU milliseconds (user + system)
// of it and everything it waited for, from getrusage(RUSAGE_CHILDREN) around it. On a
// shared machine the CPU time is the steadier of the two.
struct ProcessCost {
  double wall_ms = 0;
  double cpu_ms = 0;
  int rc = 0;
};

ProcessCost cost_of(const std::string& command, std::string* out) {
  auto cpu_ms = [] {
    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);
    auto ms = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
    };
    return ms(ru.ru_utime) + ms(ru.ru_stime);
  };
  ProcessCost c;
  double cpu0 = cpu_ms();
  auto t0 = std::chrono::steady_clock::now();
  c.rc = run(command, out);
  auto t1 = std::chrono::steady_clock::now();
  c.cpu_ms = cpu_ms() - cpu0;
  c.wall_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  return c;
}

// The whole discovery path: `berth alloc` reading a Slurm environment of 10^5 nodes
// and writing it as JSON, against `scontrol show hostnames` of the same node list. The
// runs alternate and each side is rated by its best wall and its best CPU time, so
// that a machine whose speed drifts favours neither. Target: berth alloc at
// most 2x scontrol.
bool bench_berth_alloc(const std::string& berth, const Scontrol& sc, const fs::path& tmp) {
  constexpr uint64_t kNodes = 100000;
  constexpr int kAllocRuns = 10;
  constexpr double kTarget = 2.0;
  std::printf("\n== berth alloc --env-file (SLURM_JOB_NODELIST=n[000001-100000]), best of %d\n",
              kAllocRuns);
  fs::path env = tmp / "slurm.env";
  std::ofstream(env) << "SLURM_JOB_ID=1\n"
                     << "SLURM_JOB_NODELIST=n[000001-100000]\n"
                     << "SLURM_TASKS_PER_NODE=4(x100000)\n";
  std::string cmd = shell_quote(berth) + " alloc --env-file " + shell_quote(env.string()) +
                    " --format json 2>&1 >/dev/null";
  std::string slurm_cmd = sc.command.empty()
                              ? ""
                              : sc.command + " show hostnames " +
                                    shell_quote(slurm_ranges("n", 1, kNodes, 6)) +
                                    " >/dev/null 2>&1";
  ProcessCost b{1e300, 1e300, 0};
  ProcessCost s{1e300, 1e300, 0};
  std::string err;
  for (int i = 0; i < kAllocRuns; ++i) {
    err.clear();
    ProcessCost c = cost_of(cmd, &err);
    if (c.rc != 0) {
      std::printf("  berth alloc failed (exit %d): %s\n", c.rc, err.c_str());
      return false;
    }
    b.wall_ms = std::min(b.wall_ms, c.wall_ms);
    b.cpu_ms = std::min(b.cpu_ms, c.cpu_ms);
    if (slurm_cmd.empty()) continue;
    c = cost_of(slurm_cmd, nullptr);
    s.rc = s.rc != 0 ? s.rc : c.rc;
    s.wall_ms = std::min(s.wall_ms, c.wall_ms);
    s.cpu_ms = std::min(s.cpu_ms, c.cpu_ms);
  }
  std::printf("  %-20s %9s %9s\n", "", "wall ms", "cpu ms");
  std::printf("  %-20s %9.1f %9.1f   (whole process, JSON to /dev/null)\n", "berth alloc",
              b.wall_ms, b.cpu_ms);
  if (slurm_cmd.empty()) return true;
  std::printf("  %-20s %9.1f %9.1f   (whole process, the same list)%s\n", "scontrol hostnames",
              s.wall_ms, s.cpu_ms, s.rc != 0 ? " (FAILED)" : "");
  std::printf("  %-20s %8.2fx %8.2fx\n", "berth / scontrol", b.wall_ms / s.wall_ms,
              b.cpu_ms / s.cpu_ms);
  double ratio = b.wall_ms / s.wall_ms;
  std::printf("  target berth alloc <= %.0fx scontrol (wall): %.2fx  %s\n", kTarget, ratio,
              ratio <= kTarget ? "PASS" : "MISS");
  return s.rc == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && std::string_view(argv[1]).starts_with("-"))) {
    std::fprintf(stderr, "usage: %s [PATH_TO_BERTH]\n", argv[0]);
    return 2;
  }
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec) / ("bench_hostlist." + std::to_string(getpid()));
  fs::create_directories(tmp, ec);
  if (ec) {
    std::fprintf(stderr, "bench_hostlist: cannot create %s: %s\n", tmp.c_str(),
                 ec.message().c_str());
    return 1;
  }

  Scontrol sc = find_scontrol(tmp);
  std::printf("bench_hostlist: best of %d runs in process, best of %d for processes\n",
              kInProcessRuns, kProcessRuns);
  if (sc.command.empty()) {
    std::printf("scontrol not found (apt-get install slurm-client): no Slurm comparison\n");
  } else {
    std::string out;
    double start_ms = best_ms(kProcessRuns, [&] {
      out.clear();
      (void)run(sc.command + " show hostnames n1 2>/dev/null", &out);
    });
    std::printf("comparing with %s; its start-up alone (show hostnames n1): %.1f ms\n",
                sc.note.c_str(), start_ms);
  }

  const std::vector<Case> cases = {
      {"n[0000001-1000000]", slurm_ranges("n", 1, 1000000, 7)},
      {"rack[0001-1000]-node[0001-1000]", "rack[0001-1000]-node[0001-1000]"},
      {"r[01-10]-c[01-100]-n[0001-1000]", "r[01-10]-c[01-100]-n[0001-1000]"},
  };
  bool ok = true;
  for (const Case& c : cases) ok = bench_case(c, sc, tmp) && ok;
  if (argc == 2) ok = bench_berth_alloc(argv[1], sc, tmp) && ok;

  fs::remove_all(tmp, ec);
  return ok ? 0 : 1;
}
