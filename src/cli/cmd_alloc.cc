// berth alloc: print the allocation (spec 01).
#include <cstdio>
#include <memory>

#include "alloc/discover.h"
#include "alloc/display.h"
#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/local_host.h"
#include "util/env.h"
#include "util/files.h"

namespace berth::cli {
namespace {

// Where berth looks for a default hostfile when BERTH_DEFAULT_HOSTFILE is unset.
constexpr const char* kSystemDefaultHostfile = "/etc/berth/default-hostfile";

struct AllocFlags {
  std::string format = "text";
  std::string env_file;
  std::vector<std::string> hosts;
  std::string hostfile;
  std::string default_hostfile;
  std::string flux_r;
  std::string simulate;
  int64_t multiplier = 1;
  std::string slurm_slots = "tasks";
  bool keep_fqdn = false;
};

int run_alloc(const AllocFlags& f) {
  // 1. The environment: the process's, or an env file standing in for it.
  Env env;
  if (!f.env_file.empty()) {
    auto e = Env::from_file(f.env_file);
    if (!e.ok()) return report(e.error().with_context("--env-file"));
    env = std::move(*e);
  } else {
    env = Env::from_process();
  }

  // 2. The options, with the default hostfile resolved.
  alloc::Options o;
  o.hosts = f.hosts;
  if (!f.hostfile.empty()) o.hostfile = f.hostfile;
  if (!f.flux_r.empty()) o.flux_r = f.flux_r;
  if (!f.simulate.empty()) o.simulate = f.simulate;
  o.multiplier = f.multiplier;
  o.slurm_slots = f.slurm_slots == "cpus" ? alloc::SlurmSlots::kCpus : alloc::SlurmSlots::kTasks;
  o.keep_fqdn = f.keep_fqdn;
  if (!f.default_hostfile.empty()) {
    o.default_hostfile = f.default_hostfile;
  } else if (auto d = env.get("BERTH_DEFAULT_HOSTFILE"); d && !d->empty()) {
    o.default_hostfile = *d;
  } else if (files::exists(kSystemDefaultHostfile)) {
    o.default_hostfile = kSystemDefaultHostfile;
  }

  // 3. Discover and print.
  alloc::LocalHost local = local_host();
  auto a = alloc::discover(alloc::Input{env, o, local});
  if (!a.ok()) return report(a.error());
  std::string out = f.format == "json"  ? alloc::to_json(*a)
                    : f.format == "xml" ? alloc::to_xml(*a)
                                        : alloc::to_text(*a);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

}  // namespace

std::function<int()> setup_alloc(CLI::App& app) {
  auto f = std::make_shared<AllocFlags>();
  app.add_option("--format", f->format, "Output format")
      ->check(CLI::IsMember({"text", "xml", "json"}))
      ->capture_default_str();
  app.add_option("--env-file", f->env_file,
                 "Read the environment from FILE (NAME=VALUE lines) instead of the process's");
  app.add_option("-H,--host", f->hosts,
                 "Hosts: a,b  a:4  a:*  +n<i>  +e  +e:N (under a scheduler: a filter)")
      ->take_all();
  app.add_option("--hostfile", f->hostfile,
                 "Hostfile: 'host slots=N max_slots=M', user@host, ^host, node[1-4]");
  app.add_option("--default-hostfile", f->default_hostfile,
                 "Hostfile used when nothing else names nodes (else $BERTH_DEFAULT_HOSTFILE, "
                 "else /etc/berth/default-hostfile)");
  app.add_option("--flux-r", f->flux_r, "Read a Flux R document (version 1) from FILE");
  app.add_option("--simulate", f->simulate, "Synthetic nodes: COUNTxSLOTS[,COUNTxSLOTS...]");
  app.add_option("--multiplier", f->multiplier, "Copy every node N times (simulation)")
      ->capture_default_str();
  app.add_option("--slurm-slots", f->slurm_slots,
                 "Slurm slot count from tasks (SLURM_TASKS_PER_NODE) or cpus "
                 "(SLURM_JOB_CPUS_PER_NODE)")
      ->check(CLI::IsMember({"tasks", "cpus"}))
      ->capture_default_str();
  app.add_flag("--keep-fqdn", f->keep_fqdn, "Keep fully qualified host names as they are");
  return [f] { return run_alloc(*f); };
}

}  // namespace berth::cli
