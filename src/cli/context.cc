#include "cli/context.h"

#include "pipeline/probe.h"

namespace berth::cli {

void add_alloc_flags(CLI::App& app, AllocFlags& f) {
  app.add_option("--env-file", f.env_file,
                 "Read the environment from FILE (NAME=VALUE lines) instead of the process's");
  app.add_option("-H,--host", f.hosts,
                 "Hosts: a,b  a:4  a:*  +n<i>  +e  +e:N (under a scheduler: a filter)")
      ->take_all();
  app.add_option("--hostfile", f.hostfile,
                 "Hostfile: 'host slots=N max_slots=M', user@host, ^host, node[1-4]");
  app.add_option("--default-hostfile", f.default_hostfile,
                 "Hostfile used when nothing else names nodes (else $BERTH_DEFAULT_HOSTFILE, "
                 "else /etc/berth/default-hostfile)");
  app.add_option("--flux-r", f.flux_r, "Read a Flux R document (version 1) from FILE");
  app.add_option("--simulate", f.simulate, "Synthetic nodes: COUNTxSLOTS[,COUNTxSLOTS...]");
  app.add_option("--multiplier", f.multiplier, "Copy every node N times (simulation)")
      ->capture_default_str();
  app.add_option("--slurm-slots", f.slurm_slots,
                 "Slurm slot count from tasks (SLURM_TASKS_PER_NODE) or cpus "
                 "(SLURM_JOB_CPUS_PER_NODE)")
      ->check(CLI::IsMember({"tasks", "cpus"}))
      ->capture_default_str();
  app.add_flag("--keep-fqdn", f.keep_fqdn, "Keep fully qualified host names as they are");
}

void add_machine_flags(CLI::App& app, MachineFlags& f) {
  app.add_option("--machine", f.machine, "Machine description to use (default: detect)");
  app.add_option("--sysfs-root", f.sysfs_root,
                 "Read the node's CPUs, GPUs and memory under DIR (laid out like /)");
  app.add_option("--affinity", f.affinity,
                 "Stand-in for this process's CPU affinity (a list like 0-3,8)");
  app.add_option("--launcher", f.launcher, "Launcher: auto, srun, pals, local, mpirun or hydra")
      ->check(CLI::IsMember({"auto", "srun", "pals", "local", "mpirun", "hydra"}))
      ->capture_default_str();
  app.add_option("--slurm-version", f.slurm_version,
                 "Take the Slurm version as X.Y instead of running srun --version");
}

const Env& process_env() {
  static const Env env = Env::from_process();
  return env;
}

place::VersionProbe& version_probe() {
  static pipeline::CaptureProbe probe(process_env());
  return probe;
}

Result<Env> read_env(const std::string& env_file) {
  if (env_file.empty()) return process_env();
  auto e = Env::from_file(env_file);
  if (!e.ok()) return e.error().with_context("--env-file");
  return e;
}

Result<Context> build_context(const AllocFlags& a, const MachineFlags& m) {
  BERTH_TRY(Env env, read_env(a.env_file));
  return place::build_context(std::move(env), a, m, version_probe());
}

}  // namespace berth::cli
