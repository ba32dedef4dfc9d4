#include "cli/context.h"

#include <fmt/format.h>

#include "cli/local_host.h"
#include "pipeline/probe.h"
#include "topo/gpus.h"
#include "util/files.h"

namespace berth::cli {
namespace {

// Where berth looks for a default hostfile when BERTH_DEFAULT_HOSTFILE is unset.
constexpr const char* kSystemDefaultHostfile = "/etc/berth/default-hostfile";

}  // namespace

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
  app.add_option("--launcher", f.launcher, "Launcher: auto, srun, pals or local")
      ->check(CLI::IsMember({"auto", "srun", "pals", "local"}))
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

Result<alloc::Allocation> discover_allocation(const Env& env, const AllocFlags& f) {
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
  alloc::LocalHost local = local_host();
  // Inside a Slurm task, the node's name as Slurm knows it — the name the allocation
  // lists — which need not be what gethostname() says (a NodeHostname mapping, an FQDN,
  // several slurmd on one host).
  if (auto n = env.get("SLURMD_NODENAME"); n && !n->empty() && n->size() < 256) {
    local.aliases.push_back(*n);
  }
  return alloc::discover(alloc::Input{env, o, local});
}

Result<Context> build_context(const AllocFlags& a, const MachineFlags& m) {
  Context c;
  // 1. The environment and the allocation.
  BERTH_TRY(c.env, read_env(a.env_file));
  BERTH_TRY(c.allocation, discover_allocation(c.env, a));

  // 2. The machine: named, or detected (GPUs seen help tell machines apart).
  BERTH_TRY(c.catalog, topo::Catalog::built_in());
  std::string root = m.sysfs_root.empty() ? "/" : m.sysfs_root;
  topo::DetectInputs in;
  in.env = &c.env;
  in.hostname = local_host().hostname;
  if (auto g = topo::read_gpus(root, c.env); g.ok()) in.gpus_seen = g->count();
  BERTH_TRY(topo::MachineChoice choice, topo::choose_machine(c.catalog, m.machine, in));
  c.machine = choice.machine;
  c.machine_reason = choice.reason;

  // 3. This node.
  std::optional<std::vector<int>> affinity;
  if (!m.affinity.empty()) {
    auto ids = idset::parse_ids(m.affinity);
    if (!ids.ok()) return ids.error().with_context("--affinity");
    affinity = *ids;
  }
  auto reader = topo::make_cpu_reader(root, affinity);
  topo::DescribeOptions d;
  d.root = root;
  d.configured_cores = c.machine->configured_cores();
  BERTH_TRY(c.node, topo::describe(*reader, c.env, d));

  // 4. The launcher: its kind from the allocation's owner (a Slurm job is launched
  //    with srun, a PBS job with mpiexec) or the machine; its version from running it.
  topo::LauncherKind kind = c.machine->launcher;
  c.launcher_reason = "the machine's launcher";
  if (m.launcher == "srun") {
    kind = topo::LauncherKind::kSrun;
    c.launcher_reason = "--launcher srun";
  } else if (m.launcher == "pals") {
    kind = topo::LauncherKind::kPalsMpiexec;
    c.launcher_reason = "--launcher pals";
  } else if (m.launcher == "local") {
    kind = topo::LauncherKind::kLocal;
    c.launcher_reason = "--launcher local";
  } else if (c.allocation.owner == "slurm") {
    kind = topo::LauncherKind::kSrun;
    c.launcher_reason = "the allocation is Slurm's";
  } else if (c.allocation.owner == "pbs") {
    kind = topo::LauncherKind::kPalsMpiexec;
    c.launcher_reason = "the allocation is PBS's";
  }
  if (!m.slurm_version.empty()) {
    if (kind != topo::LauncherKind::kSrun) {
      return fail(Errc::kInvalidInput, "--slurm-version: the launcher is not srun");
    }
    BERTH_TRY(place::Version v, place::parse_version_flag(m.slurm_version));
    c.launcher.kind = kind;
    c.launcher.program = "srun";
    c.launcher.version = v;
    c.launcher.version_text = "slurm " + m.slurm_version + " (from --slurm-version)";
    c.launcher.detected_by = "--slurm-version";
  } else {
    c.launcher = place::detect_launcher_cached(kind, version_probe());
  }
  return c;
}

std::optional<int64_t> Context::memory_per_node_mb() const {
  if (machine && machine->memory_per_node.value) return machine->memory_per_node.value;
  return node.memory.mb;
}

std::string Context::memory_provenance() const {
  if (machine && machine->memory_per_node.value) {
    return fmt::format("machine {} ({}): {}", machine->name,
                       topo::memory_standing_name(machine->memory_standing),
                       machine->memory_per_node.provenance);
  }
  return node.memory.provenance;
}

std::vector<place::PoolNode> Context::pool_nodes() const {
  std::vector<place::PoolNode> out;
  for (const alloc::Node* n : allocation.up_nodes()) {
    place::PoolNode p;
    p.name = n->name;
    // Nodes of one allocation are taken to be alike: every node offers this node's
    // usable core ids. A scheduler's slot count is authoritative, so a node given
    // fewer slots than it has cores offers only that many (a slot is a core's work).
    p.cores = node.usable_core_ids;
    if (n->slots_given && n->slots >= 0 && static_cast<size_t>(n->slots) < p.cores.size()) {
      p.cores.resize(static_cast<size_t>(n->slots));
    }
    p.gpu_ids = node.gpus.ids;
    p.memory_mb = memory_per_node_mb();
    out.push_back(std::move(p));
  }
  return out;
}

std::string Context::here() const {
  for (const alloc::Node* n : allocation.up_nodes()) {
    if (n->local) return n->name;
  }
  return "";
}

Result<void> Context::check_reachable(const std::vector<std::string>& nodes) const {
  const std::string me = here();
  for (const auto& n : nodes) {
    if (std::string why = place::unreachable(launcher, n, me); !why.empty()) {
      return fail(Errc::kRefused, why);
    }
  }
  return Ok{};
}

}  // namespace berth::cli
