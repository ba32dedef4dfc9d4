// berth launch: run ranks of one or more apps on this node (spec 03).
//
//   berth launch [job options] -n 2 [--] ./a : -n 2 [--] ./b
//
// Options before the first command are the job's (-n, --cpu-set and --wdir there
// belong to the first app); each ':' starts another app, with its own -n, --cpu-set,
// --wdir and environment directives before its command. A `--` may end the options
// before any app's command, as srun's and mpirun's do. Directives apply in the
// order given, the job's before the app's.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "launch/job.h"
#include "pipeline/gpu_proof.h"
#include "place/context.h"
#include "place/placement.h"
#include "topo/cores.h"
#include "topo/describe.h"
#include "topo/gpu_identity.h"
#include "topo/gpus.h"
#include "topo/mig.h"
#include "topo/nvml.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

// The GPU check of a launch's ranks (spec 02 §4): where NVML loads, each rank's process
// group is watched while it runs, and a process found on a device outside the rank's
// own is said on stderr. Only NVIDIA GPUs known by UUID; without NVML, a note.
class RankGpuCheck {
 public:
  RankGpuCheck(launch::JobSpec& spec, const std::vector<topo::GpuIdentity>& devices)
      : proof_(env_) {
    if (spec.gpus.per_rank <= 0) return;
    auto bindings = launch::compute_bindings(spec);
    if (!bindings.ok()) return;  // run_job refuses the job, and says why
    auto per_rank = launch::assign_rank_gpus(spec.gpus, bindings->cpus);
    if (!per_rank.ok()) return;
    for (size_t r = 0; r < per_rank->size(); ++r) {
      const auto& ids = (*per_rank)[r];
      std::string notice;
      ranks_.push_back(proof_.begin(spec.gpus.variable, ids, topo::identities_of(ids, devices),
                                    fmt::format("rank {}", r), &notice));
      if (!notice.empty()) std::fprintf(stderr, "berth: note: %s\n", notice.c_str());
    }
    spec.on_started = [this](int rank, pid_t pid) {
      if (rank >= 0 && static_cast<size_t>(rank) < ranks_.size() && ranks_[rank]) {
        ranks_[rank]->started(pid);
      }
    };
  }

  // Says what the watch found, rank by rank.
  void finish() {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (!ranks_[r]) continue;
      for (const std::string& n : ranks_[r]->finish()) {
        std::fprintf(stderr, "berth: rank %zu: %s\n", r, n.c_str());
      }
    }
  }

 private:
  const Env& env_ = process_env();
  pipeline::GpuProof proof_;
  std::vector<std::unique_ptr<pipeline::GpuProof::Step>> ranks_;  // null: not checked
};

struct Flags {
  int ranks = 1;
  std::string cpu_set;
  std::string wdir;
  std::string bind_to = "core";
  bool report_bindings = false;
  std::string output = "plain";
  std::string output_dir;
  std::string stdin_mode = "0";
  double timeout_s = 0;
  int grace_ms = static_cast<int>(launch::kDefaultGrace.count());
  bool keep_going = false;
  bool oversubscribe = false;
  std::string mpi = "auto";
  std::string host;
  std::string exec_agent;
  std::string sysfs_root;
  int gpus_per_rank = 0;
  std::string affinity;
  std::vector<std::string> set_env, add_env, unset_env, prepend_env, append_env, exports;
};

// Reads directive flags in the order they were given (order is the contract).
Result<std::vector<launch::EnvDirective>> ordered_directives(CLI::App& app) {
  std::vector<launch::EnvDirective> out;
  std::map<CLI::Option*, size_t> used;
  for (CLI::Option* o : app.parse_order()) {
    const std::string name = o->get_name();
    auto& k = used[o];
    const auto& res = o->results();
    // CLI11 lists a two-word option in the parse order once per word: the pair is
    // read at its first mention, and a mention with nothing left is skipped.
    if (k >= res.size()) continue;
    auto one = [&]() -> std::string { return k < res.size() ? res[k++] : std::string(); };
    Result<launch::EnvDirective> d = fail(Errc::kInternal, "");
    if (name == "--set-env") {
      d = launch::parse_set_env(one());
    } else if (name == "--add-env") {
      d = launch::parse_add_env(one());
    } else if (name == "--unset-env") {
      d = launch::parse_unset_env(one());
    } else if (name == "-x") {
      d = launch::parse_export(one());
    } else if (name == "--prepend-env" || name == "--append-env") {
      std::string a = one();
      std::string b = one();
      d = name == "--prepend-env" ? launch::parse_prepend_env(a, b)
                                  : launch::parse_append_env(a, b);
    } else {
      continue;
    }
    if (!d.ok()) return d.error();
    out.push_back(std::move(*d));
  }
  return out;
}

// One app after a ':' — its options, then its command.
Result<launch::AppSpec> parse_app_segment(const std::vector<std::string>& words, size_t index) {
  launch::AppSpec app;
  size_t i = 0;
  auto need = [&](size_t n) -> Result<void> {
    if (i + n >= words.size()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("app {}: {} needs {} argument(s)", index, words[i], n));
    }
    return Ok{};
  };
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") {  // the end of the app's options: its command follows
      ++i;
      break;
    }
    if (w.empty() || w[0] != '-') break;
    Result<launch::EnvDirective> d = fail(Errc::kInternal, "");
    if (w == "-n" || w == "--np" || w == "--ntasks") {
      BERTH_CHECK(need(1));
      auto n = str::parse_uint(words[++i], 1'000'000);
      if (!n.ok()) return n.error().with_context(fmt::format("app {}: -n", index));
      app.ranks = static_cast<int>(*n);
      continue;
    } else if (w == "--cpu-set") {
      BERTH_CHECK(need(1));
      BERTH_TRY(auto ids, place::parse_ids(words[++i], "--cpu-set"));
      app.cpu_set = ids;
      continue;
    } else if (w == "--wdir") {
      BERTH_CHECK(need(1));
      app.cwd = words[++i];
      continue;
    } else if (w == "--set-env") {
      BERTH_CHECK(need(1));
      d = launch::parse_set_env(words[++i]);
    } else if (w == "--add-env") {
      BERTH_CHECK(need(1));
      d = launch::parse_add_env(words[++i]);
    } else if (w == "--unset-env") {
      BERTH_CHECK(need(1));
      d = launch::parse_unset_env(words[++i]);
    } else if (w == "-x") {
      BERTH_CHECK(need(1));
      d = launch::parse_export(words[++i]);
    } else if (w == "--prepend-env" || w == "--append-env") {
      BERTH_CHECK(need(2));
      std::string a = words[++i];
      std::string b = words[++i];
      d = w == "--prepend-env" ? launch::parse_prepend_env(a, b) : launch::parse_append_env(a, b);
    } else {
      return fail(Errc::kInvalidInput,
                  fmt::format("app {}: '{}' is not an app option (-n, --cpu-set, --wdir, "
                              "--set-env, --add-env, --unset-env, --prepend-env, --append-env, -x)",
                              index, str::printable(w)));
    }
    if (!d.ok()) return d.error().with_context(fmt::format("app {}", index));
    app.env.push_back(std::move(*d));
  }
  app.argv.assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  if (app.argv.empty())
    return fail(Errc::kInvalidInput, fmt::format("app {} has no command", index));
  return app;
}

// The words for the apps, split at each ':'. A `--` before the first command was
// split off by main (command_tail); one after it belongs to the words CLI11 left, so
// it goes back where it stood.
std::vector<std::vector<std::string>> app_segments(CLI::App& app) {
  std::vector<std::string> rest = app.remaining();
  if (const auto& tail = command_tail()) {
    if (!rest.empty()) rest.emplace_back("--");
    rest.insert(rest.end(), tail->begin(), tail->end());
  }
  std::vector<std::vector<std::string>> segments(1);
  for (const auto& w : rest) {
    if (w == ":") {
      segments.emplace_back();
    } else {
      segments.back().push_back(w);
    }
  }
  return segments;
}

// The job's directives and its apps: the first from the flags, the rest from ':'
// segments.
Result<void> read_apps(CLI::App& app, const Flags& f, launch::JobSpec& spec) {
  std::vector<std::vector<std::string>> segments = app_segments(app);
  BERTH_TRY(spec.env, ordered_directives(app));
  launch::AppSpec first;
  first.argv = segments[0];
  first.ranks = f.ranks;
  first.cwd = f.wdir;
  if (!f.cpu_set.empty()) {
    BERTH_TRY(first.cpu_set, place::parse_ids(f.cpu_set, "--cpu-set"));
  }
  if (first.argv.empty()) return fail(Errc::kInvalidInput, "no command to launch");
  spec.apps.push_back(std::move(first));
  for (size_t i = 1; i < segments.size(); ++i) {
    BERTH_TRY(auto a, parse_app_segment(segments[i], i));
    spec.apps.push_back(std::move(a));
  }
  return Ok{};
}

// --host: mpirun's way of naming where ranks go. berth launch starts ranks on this
// node only, so any other node is refused before anything runs (spec 03 §2) rather
// than its ranks started here under its name. `short_name` is this node's name up to
// its first dot.
Result<void> check_hosts(const std::string& hosts, const alloc::LocalHost& here,
                         const std::string& short_name) {
  for (auto word : str::split(hosts, ',')) {
    std::string_view name = word.substr(0, word.find(':'));
    if (name.empty()) continue;
    bool local = name == here.hostname || name == short_name;
    for (const auto& a : here.aliases) local = local || name == a;
    if (!local) {
      return fail(Errc::kRefused,
                  fmt::format("--host: '{}' is not this node ('{}'); berth launch starts "
                              "ranks on this node only: reach other nodes with srun, or "
                              "berth place --run inside their allocation",
                              str::printable(name), short_name));
    }
  }
  return Ok{};
}

// This node's CPUs: one id per physical core, and every hardware thread.
Result<void> read_cpus(const Flags& f, launch::JobSpec& spec) {
  std::optional<std::vector<int>> affinity;
  if (!f.affinity.empty()) {
    auto ids = idset::parse_ids(f.affinity);
    if (!ids.ok()) return ids.error().with_context("--affinity");
    affinity = *ids;
  }
  auto reader = topo::make_cpu_reader(f.sysfs_root.empty() ? "/" : f.sysfs_root, affinity);
  BERTH_TRY(topo::CpuReading reading, reader->read());
  topo::CoreSelection cores = topo::select_cores(reading, std::nullopt);
  spec.usable_cores = cores.usable_core_ids;
  spec.hwthreads = reading.allowed;
  return Ok{};
}

// Each rank its own GPUs, the ones nearest its bound core (rank_gpus.h): the node's
// GPUs into `spec`, and their identities, aligned with spec.gpus.ids (none without
// --gpus-per-rank).
Result<std::vector<topo::GpuIdentity>> read_rank_gpus(const Flags& f, launch::JobSpec& spec) {
  if (f.gpus_per_rank < 0) {
    return fail(Errc::kInvalidInput, "--gpus-per-rank must not be negative");
  }
  if (f.gpus_per_rank == 0) return std::vector<topo::GpuIdentity>{};
  const std::string root = f.sysfs_root.empty() ? "/" : f.sysfs_root;
  auto gpus = topo::read_gpus(root, process_env());
  if (!gpus.ok()) return gpus.error().with_context("--gpus-per-rank");
  auto devices = topo::read_gpu_identities(root, gpus->vendor);
  if (!devices.ok()) return devices.error().with_context("--gpus-per-rank");
  // Where MIG is on, its instances are the devices, as berth machine shows them.
  auto open_nvml = [&](std::string* why) { return topo::open_nvml(process_env(), why); };
  auto mig = topo::describe_mig(root, open_nvml, *gpus, *devices);
  if (!mig.ok()) return mig.error().with_context("--gpus-per-rank");
  spec.gpus.per_rank = f.gpus_per_rank;
  spec.gpus.variable = topo::gpu_visibility_variable(gpus->vendor);
  spec.gpus.ids = gpus->ids;
  for (const auto& d : topo::identities_of(gpus->ids, *devices)) {
    spec.gpus.local_cores.push_back(d.local_cores);
  }
  return topo::identities_of(gpus->ids, *devices);
}

// The rest of the job: binding, output, input, time limits, wire-up, exec agent.
Result<void> read_job_options(const Flags& f, launch::JobSpec& spec) {
  spec.bind = f.bind_to == "none"       ? launch::BindTo::kNone
              : f.bind_to == "hwthread" ? launch::BindTo::kHwthread
                                        : launch::BindTo::kCore;
  spec.report_bindings = f.report_bindings;
  spec.output = f.output == "tag"            ? launch::OutputMode::kTag
                : f.output == "tag-detailed" ? launch::OutputMode::kTagDetailed
                : f.output == "timestamp"    ? launch::OutputMode::kTimestamp
                : f.output == "xml"          ? launch::OutputMode::kXml
                                             : launch::OutputMode::kPlain;
  spec.output_dir = f.output_dir;
  spec.stdin_mode = f.stdin_mode == "all"    ? launch::StdinMode::kAll
                    : f.stdin_mode == "none" ? launch::StdinMode::kNone
                                             : launch::StdinMode::kRank0;
  if (f.timeout_s < 0) return fail(Errc::kInvalidInput, "--timeout must not be negative");
  if (f.timeout_s > 0) {
    spec.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  }
  if (f.grace_ms < 0) return fail(Errc::kInvalidInput, "--grace must not be negative");
  spec.grace = std::chrono::milliseconds(f.grace_ms);
  spec.keep_going = f.keep_going;
  spec.oversubscribe = f.oversubscribe;
  auto mode = wireup::parse_mode(f.mpi);
  if (!mode.ok()) return mode.error().with_context("--mpi");
  spec.mpi = *mode;
  for (auto w : str::split_ws(f.exec_agent)) spec.exec_agent.emplace_back(w);
  return Ok{};
}

// Runs the job, forwarding output to berth's own streams; says how it ended and
// returns its exit status.
int run_forwarded(launch::JobSpec& spec, const std::vector<topo::GpuIdentity>& gpu_devices) {
  launch::OutputSinks sinks;
  sinks.out = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  sinks.err = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
  };
  RankGpuCheck check(spec, gpu_devices);
  auto outcome = launch::run_job(spec, process_env(), launch::Spawner::real(), sinks);
  check.finish();
  if (!outcome.ok()) return report(outcome.error());
  for (const auto& m : outcome->messages) std::fprintf(stderr, "berth: %s\n", m.c_str());
  return outcome->exit_code;
}

int run_launch(CLI::App& app, const Flags& f) {
  launch::JobSpec spec;
  // 1. The apps, on this node only.
  if (auto r = read_apps(app, f, spec); !r.ok()) return report(r.error());
  alloc::LocalHost here = place::local_host();
  const std::string short_name = here.hostname.substr(0, here.hostname.find('.'));
  if (auto r = check_hosts(f.host, here, short_name); !r.ok()) return report(r.error());
  // 2. This node's CPUs and GPUs.
  if (auto r = read_cpus(f, spec); !r.ok()) return report(r.error());
  auto gpu_devices = read_rank_gpus(f, spec);
  if (!gpu_devices.ok()) return report(gpu_devices.error());
  // 3. The rest of the job.
  if (auto r = read_job_options(f, spec); !r.ok()) return report(r.error());
  spec.job_id = std::to_string(::getpid());
  spec.node = short_name;
  // 4. Run.
  return run_forwarded(spec, *gpu_devices);
}

}  // namespace

std::function<int()> setup_launch(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  app.add_option("-n,--np", f->ranks, "Ranks of the (first) app")->capture_default_str();
  app.add_option("--cpu-set", f->cpu_set, "Bind the (first) app within these CPU ids");
  app.add_option("--wdir", f->wdir, "Working directory of the (first) app");
  // Each directive flag takes its own argument(s) per occurrence and may repeat;
  // ordered_directives() reads them back in command-line order.
  auto repeatable = [](CLI::Option* o, int words) {
    o->type_size(words)->expected(1)->allow_extra_args(false)->multi_option_policy(
        CLI::MultiOptionPolicy::TakeAll);
  };
  repeatable(app.add_option("--set-env", f->set_env, "N=V: set N"), 1);
  repeatable(app.add_option("--add-env", f->add_env, "N=V: set N only if unset"), 1);
  repeatable(app.add_option("--unset-env", f->unset_env, "N (or PREFIX*): remove"), 1);
  repeatable(app.add_option("--prepend-env", f->prepend_env, "'N[sep]' V: prepend V to N"), 2);
  repeatable(app.add_option("--append-env", f->append_env, "'N[sep]' V: append V to N"), 2);
  repeatable(app.add_option("-x", f->exports, "N, N=V or PREFIX*: export to the ranks"), 1);
  app.add_option("--bind-to", f->bind_to, "Bind each rank to a core, a hardware thread, or none")
      ->check(CLI::IsMember({"core", "hwthread", "none"}))
      ->capture_default_str();
  app.add_flag("--report-bindings", f->report_bindings, "Print each rank's binding on stderr");
  app.add_option("--output", f->output, "Output: plain, tag, tag-detailed, timestamp, xml")
      ->check(CLI::IsMember({"plain", "tag", "tag-detailed", "timestamp", "xml"}))
      ->capture_default_str();
  app.add_option("--output-dir", f->output_dir, "Write DIR/rank.N/stdout and stderr instead");
  app.add_option("--stdin", f->stdin_mode, "Who reads berth's stdin: 0 (rank 0), all, none")
      ->check(CLI::IsMember({"0", "all", "none"}))
      ->capture_default_str();
  app.add_option("--timeout", f->timeout_s, "End the job after this many seconds");
  app.add_option("--grace", f->grace_ms, "Milliseconds between SIGTERM and SIGKILL")
      ->capture_default_str();
  app.add_flag("--keep-going", f->keep_going, "Do not abort the job on the first failure");
  app.add_flag("--oversubscribe", f->oversubscribe,
               "Allow an app more ranks than usable cores; such an app runs unbound");
  app.add_option("--mpi", f->mpi,
                 "MPI wire-up the ranks get: auto (PMIx and PMI), pmix, pmi1, pmi2, none")
      ->capture_default_str();
  app.add_option("--host", f->host, "Nodes the ranks may run on (this node only): h[:n],…");
  app.add_option("--exec-agent", f->exec_agent, "Wrap every rank's exec: 'CMD ARGS'");
  app.add_option("--gpus-per-rank", f->gpus_per_rank,
                 "Give each rank N GPUs of its own, nearest its bound core");
  app.add_option("--sysfs-root", f->sysfs_root, "Read the node's CPUs and GPUs under DIR");
  app.add_option("--affinity", f->affinity, "Stand-in for berth's CPU affinity");
  app.prefix_command();
  CLI::App* self = &app;
  return [f, self] { return run_launch(*self, *f); };
}

}  // namespace berth::cli
