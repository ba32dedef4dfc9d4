#include "place/context.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>

#include "alloc/hostlist.h"
#include "place/mpi_launcher.h"
#include "topo/cpu_reader.h"
#include "topo/gpus.h"
#include "util/files.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::place {
namespace {

// Where berth looks for a default hostfile when BERTH_DEFAULT_HOSTFILE is unset.
constexpr const char* kSystemDefaultHostfile = "/etc/berth/default-hostfile";

int64_t affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int64_t usable_cores() {
  // The same reading the node's description uses (topo/cpu_reader.h), so the topology
  // is loaded once: a core counts when any of its allowed threads does.
  auto r = topo::HwlocCpuReader().read();
  if (!r.ok()) return affinity_cpu_count();
  std::set<int> cores;
  for (int id : r->allowed) {
    auto it = r->siblings.find(id);
    cores.insert(it != r->siblings.end() && !it->second.empty() ? it->second.front() : id);
  }
  return cores.empty() ? affinity_cpu_count() : static_cast<int64_t>(cores.size());
}

}  // namespace

alloc::LocalHost local_host() {
  // Once per process: the answer cannot change under a running berth that did not move
  // itself. The cores are counted only if a source asks: loading the topology is most
  // of the cost, and only the hosts source does.
  static const alloc::LocalHost cached = [] {
    alloc::LocalHost h;
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof buf - 1) == 0 && buf[0]) {
      h.hostname = buf;
    } else {
      h.hostname = "localhost";
    }
    h.aliases = {"localhost", "localhost.localdomain", "127.0.0.1", "::1"};
    h.count_cores = [] {
      static const int64_t n = usable_cores();
      return n;
    };
    return h;
  }();
  return cached;
}

Result<alloc::Allocation> discover_allocation(const Env& env, const AllocationOptions& f) {
  alloc::Options o;
  o.hosts = f.hosts;
  if (!f.hostfile.empty()) o.hostfile = f.hostfile;
  if (!f.flux_r.empty()) o.flux_r = f.flux_r;
  if (!f.simulate.empty()) o.simulate = f.simulate;
  o.multiplier = f.multiplier;
  if (f.slurm_slots != "tasks" && f.slurm_slots != "cpus") {
    return fail(Errc::kInvalidInput, fmt::format("--slurm-slots: '{}' is neither tasks nor cpus",
                                                 str::printable(f.slurm_slots)));
  }
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

namespace {

// The machine (named, or detected: GPUs seen help tell machines apart) and this node's
// description, into `c` (whose env is set).
Result<void> describe_here(Context& c, const MachineOptions& m) {
  BERTH_TRY(c.catalog, topo::Catalog::built_in());
  std::string root = m.sysfs_root.empty() ? "/" : m.sysfs_root;
  topo::DetectInputs in;
  in.env = &c.env;
  in.hostname = local_host().hostname;
  if (auto g = topo::read_gpus(root, c.env); g.ok()) in.gpus_seen = g->count();
  BERTH_TRY(topo::MachineChoice choice, topo::choose_machine(c.catalog, m.machine, in));
  c.machine = choice.machine;
  c.machine_reason = choice.reason;

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

  return Ok{};
}

}  // namespace

Result<NodeOffer> node_offer_here(Env env, const MachineOptions& m) {
  Context c;
  c.env = std::move(env);
  BERTH_CHECK(describe_here(c, m));
  return c.offer();
}

Result<Context> build_context(Env env, const AllocationOptions& a, const MachineOptions& m,
                              VersionProbe& probe) {
  Context c;
  // 1. The environment and the allocation.
  c.env = std::move(env);
  BERTH_TRY(c.allocation, discover_allocation(c.env, a));

  // 2. The machine and 3. this node.
  BERTH_CHECK(describe_here(c, m));

  // 4. The launcher: its kind from the allocation's owner (a Slurm job is launched
  //    with srun, a PBS job with mpiexec) or the machine; its version from running it.
  if (auto chosen = choose_mpi_launcher(c, m, probe)) return std::move(*chosen);  // spec 02 §8
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
  } else if (m.launcher != "auto" && !m.launcher.empty()) {
    return fail(Errc::kInvalidInput,
                fmt::format("--launcher: '{}' is none of auto, srun, pals and local",
                            str::printable(m.launcher)));
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
    BERTH_TRY(Version v, parse_version_flag(m.slurm_version));
    c.launcher.kind = kind;
    c.launcher.program = "srun";
    c.launcher.version = v;
    c.launcher.version_text = "slurm " + m.slurm_version + " (from --slurm-version)";
    c.launcher.detected_by = "--slurm-version";
  } else {
    c.launcher = detect_launcher_cached(kind, probe);
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

NodeOffer Context::offer() const {
  NodeOffer o;
  o.cores = node.usable_core_ids;
  o.gpu_ids = node.gpus.ids;
  o.gpu_variable = topo::gpu_visibility_variable(node.gpus.vendor);
  o.gpu_devices = topo::identities_of(o.gpu_ids, node.gpu_devices);
  o.memory_mb = memory_per_node_mb();
  o.cores_provenance = node.cores_provenance;
  return o;
}

std::vector<PoolNode> Context::pool_nodes(const std::map<std::string, NodeOffer>& offers) const {
  std::vector<PoolNode> out;
  const NodeOffer mine = offer();
  for (const alloc::Node* n : allocation.up_nodes()) {
    // A node that described itself (its agent's hello) offers what it has; any other
    // is taken to be like this one, since berth cannot read it from here.
    auto own = offers.find(n->name);
    const NodeOffer& o = own != offers.end() ? own->second : mine;
    PoolNode p;
    p.name = n->name;
    // A scheduler's slot count is authoritative, so a node given fewer slots than it
    // has cores offers only that many (a slot is a core's work).
    p.cores = o.cores;
    if (n->slots_given && n->slots >= 0 && static_cast<size_t>(n->slots) < p.cores.size()) {
      p.cores.resize(static_cast<size_t>(n->slots));
    }
    p.gpu_ids = o.gpu_ids;
    p.gpu_variable = o.gpu_variable;
    p.gpu_devices = o.gpu_devices;
    p.memory_mb = o.memory_mb;
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
    if (std::string why = unreachable(launcher, n, me); !why.empty()) {
      return fail(Errc::kRefused, why);
    }
  }
  return Ok{};
}

Result<void> Context::check_nodes(const std::vector<std::string>& nodes) const {
  for (const auto& name : nodes) {
    bool found = false;
    for (const alloc::Node* n : allocation.up_nodes()) {
      found |= n->name == name || n->rawname == name;
    }
    if (!found) {
      std::vector<std::string> names;
      for (const alloc::Node* n : allocation.up_nodes()) names.push_back(n->name);
      return fail(Errc::kRefused,
                  fmt::format("node '{}' is not in the {} allocation ({})", str::printable(name),
                              allocation.owner, alloc::hostlist::compress(names)));
    }
  }
  return Ok{};
}

std::vector<int> Context::usable_cores(std::string_view node_name) const {
  for (const auto& u : pool_nodes()) {
    if (u.name == node_name) return u.cores;
  }
  return {};
}

Result<Placement> Context::named_placement(std::vector<std::string> nodes,
                                           std::vector<std::vector<int>> cores) const {
  Placement p;
  if (nodes.empty()) {
    std::string me = here();
    if (me.empty()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("a placement naming no node means this node, which is not in "
                              "the {} allocation; name the nodes",
                              allocation.owner));
    }
    nodes = {me};
  }
  BERTH_CHECK(check_nodes(nodes));
  if (!cores.empty() && cores.size() != 1 && cores.size() != nodes.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{} core set(s) for {} node(s): give one set for every node, or "
                            "one per node",
                            cores.size(), nodes.size()));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<int> usable_here = usable_cores(nodes[i]);
    std::vector<int> set = cores.empty() ? usable_here : cores.size() == 1 ? cores[0] : cores[i];
    for (int id : set) {
      if (std::find(usable_here.begin(), usable_here.end(), id) == usable_here.end()) {
        return fail(Errc::kRefused, fmt::format("core {} is not usable on node '{}' (usable: {})",
                                                id, nodes[i], idset::encode_ids(usable_here)));
      }
    }
    p.cores.push_back(std::move(set));
  }
  p.nodes = std::move(nodes);
  return p;
}

LaunchSpec Context::launch_spec(int tasks, int cpus_per_task, MemoryCap memory_cap,
                                std::vector<std::string> command) const {
  LaunchSpec s;
  s.tasks = tasks;
  s.cpus_per_task = cpus_per_task;
  s.memory_cap = memory_cap;
  s.command = std::move(command);
  s.local_gpu_variable = topo::gpu_visibility_variable(node.gpus.vendor);
  return s;
}

nlohmann::ordered_json machine_json(const Context& c) {
  using nlohmann::ordered_json;
  const auto& m = *c.machine;
  ordered_json j;
  j["version"] = 1;
  j["machine"] = m.name;
  j["machine_reason"] = c.machine_reason;
  j["description"] = m.description;
  ordered_json l;
  l["kind"] = topo::launcher_kind_name(c.launcher.kind);
  l["program"] = c.launcher.program;
  l["version"] = c.launcher.version
                     ? ordered_json(fmt::format("{}.{:02}", c.launcher.version->major,
                                                c.launcher.version->minor))
                     : ordered_json(nullptr);
  l["version_text"] = c.launcher.version_text;
  l["detected_by"] = c.launcher.detected_by;
  l["chosen_because"] = c.launcher_reason;
  l["mpi_plugins"] =
      c.launcher.mpi_plugins ? ordered_json(*c.launcher.mpi_plugins) : ordered_json(nullptr);
  if (!c.launcher.mpi_text.empty()) l["mpi_detected_by"] = c.launcher.mpi_text;
  j["launcher"] = l;
  j["cores_per_node"] = c.node.configured_cores ? ordered_json(*c.node.configured_cores)
                                                : ordered_json(c.node.usable_core_ids.size());
  j["cores_provenance"] =
      m.cores_per_node.value ? m.cores_per_node.provenance : "detected: " + c.node.cores_provenance;
  j["usable_core_ids"] = c.node.usable_core_ids;
  j["usable_core_list"] = idset::encode_ids(c.node.usable_core_ids);
  j["core_basis"] = topo::core_basis_name(c.node.core_basis);
  j["threads_per_core"] = c.node.threads_per_core;
  ordered_json g;
  g["count"] = c.node.gpus.count();
  g["ids"] = c.node.gpus.ids;
  g["vendor"] = topo::gpu_vendor_name(c.node.gpus.vendor);
  g["provenance"] = c.node.gpus.provenance;
  // Each GPU the node shows, which is which, and whether this process may use it.
  g["devices"] = ordered_json::array();
  const auto& usable = c.node.gpus.ids;
  for (const auto& d : c.node.gpu_devices) {
    ordered_json e;
    e["id"] = d.id;
    e["uuid"] = d.uuid.empty() ? ordered_json(nullptr) : ordered_json(d.uuid);
    e["model"] = d.model.empty() ? ordered_json(nullptr) : ordered_json(d.model);
    e["bus"] = d.bus.empty() ? ordered_json(nullptr) : ordered_json(d.bus);
    e["numa_node"] = d.numa_node < 0 ? ordered_json(nullptr) : ordered_json(d.numa_node);
    e["local_cores"] = idset::encode_ids(d.local_cores);
    e["usable"] = std::find(usable.begin(), usable.end(), d.id) != usable.end() ||
                  (!d.uuid.empty() && std::find(usable.begin(), usable.end(), d.uuid) != usable.end());
    g["devices"].push_back(std::move(e));
  }
  g["per_node_configured"] =
      m.gpus_per_node.value ? ordered_json(*m.gpus_per_node.value) : ordered_json(nullptr);
  j["gpus"] = g;
  auto mem = c.memory_per_node_mb();
  j["memory_per_node_mb"] = mem ? ordered_json(*mem) : ordered_json(nullptr);
  j["memory_provenance"] = c.memory_provenance();
  j["node_memory_mb"] = c.node.memory.mb ? ordered_json(*c.node.memory.mb) : ordered_json(nullptr);
  j["node_memory_provenance"] = c.node.memory.provenance;
  std::vector<std::string> names;
  for (const auto* n : c.allocation.up_nodes()) names.push_back(n->name);
  j["allocation_owner"] = c.allocation.owner;
  j["node_count"] = names.size();
  j["nodes"] = names;
  j["memory_total_mb"] =
      mem ? ordered_json(*mem * static_cast<int64_t>(names.size())) : ordered_json(nullptr);
  j["placement_support"] = mechanism_name(placement_support(c.launcher));
  std::string why = placement_refusal(c.launcher);
  if (!why.empty()) j["placement_refusal"] = why;
  j["memory_cap_support"] = cap_support_name(memory_cap_support(c.launcher));
  // The wire-up an MPI launch of several tasks gets here: what the renderer asks of
  // this launcher for one (spec 07 §4).
  LaunchSpec probe;
  probe.tasks = 2;
  probe.command = {"mpi-program"};
  auto rendered = render(m, c.launcher, std::nullopt, probe);
  ordered_json w;
  if (rendered.ok()) {
    w["by"] = rendered->wireup.empty() ? ordered_json(nullptr) : ordered_json(rendered->wireup);
    std::vector<std::string> notes;
    for (const auto& n : rendered->notes) {
      if (n.find("--mpi") != std::string::npos) notes.push_back(n);
    }
    w["notes"] = notes;
  } else {
    w["by"] = nullptr;
    w["notes"] = std::vector<std::string>{rendered.error().message()};
  }
  j["mpi_wireup"] = w;
  j["diagnostics"] = c.node.diagnostics;
  return j;
}

nlohmann::ordered_json rendering_json(const Rendered& r, const std::optional<Placement>& p,
                                      const LaunchSpec& s, const Launcher& l) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["version"] = 1;
  j["argv"] = r.argv;
  ordered_json env = ordered_json::object();
  for (const auto& [k, v] : r.env) env[k] = v;
  j["env"] = env;
  j["mechanism"] = mechanism_name(r.mechanism);
  j["memory_cap"] = cap_state_name(r.memory_cap);
  j["memory_cap_mb"] = s.memory_cap ? ordered_json(*s.memory_cap) : ordered_json(nullptr);
  if (p) {
    ordered_json pj;
    pj["nodes"] = p->nodes;
    std::vector<std::string> cores;
    for (const auto& set : p->cores) cores.push_back(idset::encode_ids(set));
    pj["cores"] = cores;
    pj["gpus"] = p->gpus;
    pj["gpu_ids"] = p->gpu_ids;
    j["placement"] = pj;
  } else {
    j["placement"] = nullptr;
  }
  j["bind_cpus"] =
      r.bind_cpus.empty() ? ordered_json(nullptr) : ordered_json(idset::encode_ids(r.bind_cpus));
  j["tasks"] = s.tasks;
  j["cpus_per_task"] = s.cpus_per_task;
  j["launcher"] = {{"kind", topo::launcher_kind_name(l.kind)}, {"version_text", l.version_text}};
  j["notes"] = r.notes;
  return j;
}

}  // namespace berth::place
