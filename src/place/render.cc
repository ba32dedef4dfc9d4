#include "place/render.h"

#include <fmt/format.h>

#include <algorithm>

#include "place/render_mpi.h"
#include "topo/gpus.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::place {

const char* cap_state_name(CapState s) {
  switch (s) {
    case CapState::kEnforced: return "enforced";
    case CapState::kNotEnforced: return "not-enforced";
    case CapState::kAbsent: return "absent";
  }
  return "absent";
}

namespace {

using topo::LauncherKind;

// A binding value that names resources ("list:1-8:9-16", "map_cpu:0,1",
// "mask_cpu:0x3") says where tasks go, which is the placement's job: it contradicts
// any placement.
bool names_resources(std::string_view v) {
  return v.rfind("list:", 0) == 0 || v.rfind("map_", 0) == 0 || v.rfind("mask_", 0) == 0;
}

// The machine's fixed launcher arguments, when it is the machine's own launcher.
std::vector<std::string> fixed_args(const topo::MachineDescription& m, const Launcher& l) {
  if (m.launcher != l.kind) return {};
  return m.launcher_args;
}

// The machine's binding options that survive beside a placement (or all of them
// without one), as "--opt=value" (Slurm) or "--opt value" (PALS) words.
struct KeptBinding {
  std::vector<std::string> words;
  std::vector<std::string> notes;
};

KeptBinding kept_binding(const topo::Binding& b, const Launcher& l, bool placed,
                         bool old_slurm) {
  KeptBinding k;
  bool pals = l.kind == LauncherKind::kPalsMpiexec;
  auto add = [&](const char* opt, const std::string& v) {
    if (pals) {
      k.words.push_back(opt);
      k.words.push_back(v);
    } else {
      k.words.push_back(fmt::format("{}={}", opt, v));
    }
  };
  auto drop = [&](const char* what, const std::string& v, const char* why) {
    k.notes.push_back(fmt::format("dropped the machine's {}={}: {}", what, v, why));
  };
  if (!b.cpu_bind.empty()) {
    if (placed && (names_resources(b.cpu_bind) || old_slurm || pals)) {
      drop("cpu_bind", b.cpu_bind, "the placement's own core binding replaces it");
    } else {
      add("--cpu-bind", b.cpu_bind);
    }
  }
  if (!b.distribution.empty()) {
    if (pals) {
      k.notes.push_back(fmt::format("ignored the machine's distribution={}: PALS has none",
                                    b.distribution));
    } else if (placed && old_slurm) {
      drop("distribution", b.distribution,
           "the CPU masks assume tasks fill each node in turn");
    } else {
      add("--distribution", b.distribution);
    }
  }
  if (!b.gpu_bind.empty()) {
    if (pals) {
      k.notes.push_back(fmt::format("ignored the machine's gpu_bind={}: PALS has none",
                                    b.gpu_bind));
    } else if (placed && (b.gpu_bind == "none" || names_resources(b.gpu_bind))) {
      drop("gpu_bind", b.gpu_bind,
           b.gpu_bind == "none" ? "kept beside a placement it left concurrent launches with no GPU"
                                : "it names GPUs, which the placement decides");
    } else {
      add("--gpu-bind", b.gpu_bind);
    }
  }
  if (!b.mem_bind.empty()) {
    if (placed && names_resources(b.mem_bind)) {
      drop("mem_bind", b.mem_bind, "it names memory domains per task, which the placement's "
                                   "tasks need not match");
    } else {
      add("--mem-bind", b.mem_bind);
    }
  }
  return k;
}

std::string hex_mask(const std::vector<int>& cpus) {
  // A hex mask of arbitrary width, most significant digit first.
  int top = cpus.empty() ? 0 : cpus.back();
  std::string digits((static_cast<size_t>(top) / 4) + 1, '0');
  for (int c : cpus) {
    size_t d = digits.size() - 1 - static_cast<size_t>(c) / 4;
    int v = (digits[d] <= '9' ? digits[d] - '0' : digits[d] - 'a' + 10) | (1 << (c % 4));
    digits[d] = static_cast<char>(v < 10 ? '0' + v : 'a' + v - 10);
  }
  return "0x" + digits;
}

// Core sets of every node must be equal where the launcher applies one node's list to
// every node (Slurm's mask_cpu, PALS's list:) — measured on Chrysalis and Aurora.
Result<void> require_same_cores(const Placement& p, const char* launcher) {
  for (size_t i = 1; i < p.nodes.size(); ++i) {
    if (p.cores[i] != p.cores[0]) {
      return fail(Errc::kRefused,
                  fmt::format("{} applies one node's core list to every node, but node '{}' "
                              "asks for cores {} and node '{}' for {}",
                              launcher, p.nodes[0], idset::encode_ids(p.cores[0]), p.nodes[i],
                              idset::encode_ids(p.cores[i])));
    }
  }
  return Ok{};
}

// The cores of local task j on a node: the j-th run of cpus_per_task ids.
std::vector<int> task_cores(const std::vector<int>& node_cores, int j, int c) {
  auto b = node_cores.begin() + static_cast<std::ptrdiff_t>(j) * c;
  return std::vector<int>(b, b + c);
}

// The --mpi plugin an srun step asks for (spec 07 §4), appended to r.argv. A machine's
// own --mpi (its launcher_args) stands unless the launch named a different one.
Result<void> add_slurm_mpi(const Launcher& l, const LaunchSpec& s, Rendered& r) {
  using wireup::Mode;
  const bool named = s.mpi != Mode::kAuto;
  auto machine_flag = std::find_if(r.argv.begin(), r.argv.end(),
                                   [](const std::string& w) { return w.rfind("--mpi=", 0) == 0; });
  std::string machine_plugin =
      machine_flag != r.argv.end() ? machine_flag->substr(6) : std::string();
  if (s.mpi == Mode::kNone) {
    if (machine_flag != r.argv.end()) r.argv.erase(machine_flag);
    r.argv.push_back("--mpi=none");
    r.wireup = "none";
    return Ok{};
  }
  if (!named && !machine_plugin.empty()) {
    r.wireup = "srun --mpi=" + machine_plugin + " (the machine's)";
    return Ok{};
  }
  if (!named && s.tasks == 1) return Ok{};  // one task needs no peers
  const char* wanted = named ? wireup::mode_name(s.mpi) : "pmix or pmi2";
  if (!l.mpi_plugins) {
    std::string why = l.mpi_text.empty() ? "srun --mpi=list was not asked" : l.mpi_text;
    if (named) {
      return fail(
          Errc::kRefused,
          fmt::format("--mpi {}: which MPI plugins this Slurm has is unknown ({})", wanted, why));
    }
    r.notes.push_back(
        fmt::format("no --mpi rendered: which MPI plugins this Slurm has is "
                    "unknown ({}); the step gets Slurm's MpiDefault",
                    why));
    return Ok{};
  }
  auto has = [&](std::string_view name) {
    return std::find(l.mpi_plugins->begin(), l.mpi_plugins->end(), name) != l.mpi_plugins->end();
  };
  std::string plugin;
  if ((s.mpi == Mode::kAuto || s.mpi == Mode::kPmix) && has("pmix")) plugin = "pmix";
  // Slurm's pmi2 plugin answers PMI-1 clients too, so it serves pmi1 as well.
  if (plugin.empty() && s.mpi != Mode::kPmix && has("pmi2")) plugin = "pmi2";
  std::string offered = l.mpi_plugins->empty() ? "none" : str::join(*l.mpi_plugins, ", ");
  if (plugin.empty()) {
    if (named) {
      return fail(Errc::kRefused,
                  fmt::format("--mpi {}: this Slurm has no MPI plugin for it (srun --mpi=list: "
                              "{}); its {} tasks would start as singletons",
                              wanted, offered, s.tasks));
    }
    r.notes.push_back(
        fmt::format("no --mpi rendered: this Slurm has neither pmix nor pmi2 "
                    "(srun --mpi=list: {}); MPI tasks would start as singletons",
                    offered));
    return Ok{};
  }
  if (machine_flag != r.argv.end()) {
    if (machine_plugin != plugin) {
      r.notes.push_back(fmt::format("replaced the machine's --mpi={} with --mpi={}, as asked",
                                    machine_plugin, plugin));
    }
    r.argv.erase(machine_flag);
  }
  r.argv.push_back("--mpi=" + plugin);
  r.wireup = "srun --mpi=" + plugin;
  return Ok{};
}

CapState cap_state(const LaunchSpec& s, const Launcher& l) {
  if (!s.memory_cap) return CapState::kAbsent;
  return memory_cap_support(l) == CapSupport::kEnforced ? CapState::kEnforced
                                                        : CapState::kNotEnforced;
}

Result<Rendered> render_srun(const topo::MachineDescription& m, const Launcher& l,
                             const std::optional<Placement>& p, const LaunchSpec& s) {
  Rendered r;
  bool old = l.version && !l.version->at_least(kSlurmStepIsolation.major,
                                               kSlurmStepIsolation.minor);
  r.argv.push_back("srun");
  for (const auto& a : fixed_args(m, l)) r.argv.push_back(a);
  KeptBinding kb = kept_binding(m.binding, l, p.has_value(), old);
  r.notes = kb.notes;
  for (const auto& w : kb.words) r.argv.push_back(w);

  if (p) {
    BERTH_TRY(std::vector<int> per_node, fill_nodes_in_turn(*p, s.tasks, s.cpus_per_task));
    (void)per_node;
    r.argv.push_back(fmt::format("--nodes={}", p->nodes.size()));
    r.argv.push_back("--nodelist=" + str::join(p->nodes, ","));
    r.argv.push_back(fmt::format("--ntasks={}", s.tasks));
    r.argv.push_back(fmt::format("--cpus-per-task={}", s.cpus_per_task));
    if (!old) {
      // A step reserves exactly what it asks for, and asks for no GPU unless told.
      r.argv.push_back("--exact");
      r.argv.push_back(fmt::format("--gpus={}", p->gpus));
      if (!p->gpu_ids.empty()) {
        r.notes.push_back("Slurm assigns GPUs itself: the placement's GPU ids are not rendered");
      }
      r.mechanism = Mechanism::kSchedulerEnforced;
    } else {
      if (p->gpus > 0) {
        return fail(Errc::kRefused,
                    fmt::format("Slurm {}.{} cannot confine GPUs to a step (it predates 20.11); "
                                "a placement asking for {} GPU(s) cannot be honoured",
                                l.version->major, l.version->minor, p->gpus));
      }
      BERTH_CHECK(require_same_cores(*p, "srun --cpu-bind=mask_cpu"));
      // One mask per task index on a node: Slurm restarts the list on every node.
      int most = *std::max_element(per_node.begin(), per_node.end());
      std::vector<std::string> masks;
      for (int j = 0; j < most; ++j) masks.push_back(hex_mask(task_cores(p->cores[0], j, s.cpus_per_task)));
      r.argv.push_back("--cpu-bind=mask_cpu:" + str::join(masks, ","));
      r.mechanism = Mechanism::kCpuBinding;
    }
  } else {
    r.argv.push_back(fmt::format("--ntasks={}", s.tasks));
    r.argv.push_back(fmt::format("--cpus-per-task={}", s.cpus_per_task));
  }
  BERTH_CHECK(add_slurm_mpi(l, s, r));
  r.memory_cap = cap_state(s, l);
  if (r.memory_cap == CapState::kEnforced) {
    r.argv.push_back(fmt::format("--mem={}M", *s.memory_cap));
  } else if (r.memory_cap == CapState::kNotEnforced) {
    r.notes.push_back(fmt::format("the memory cap of {} MB is not rendered: this Slurm does not "
                                  "enforce a step's --mem",
                                  *s.memory_cap));
  }
  for (const auto& w : s.command) r.argv.push_back(w);
  return r;
}

std::string pals_gpu_variable(const topo::MachineDescription& m) {
  return m.gpu_visibility_variable;
}

Result<Rendered> render_pals(const topo::MachineDescription& m, const Launcher& l,
                             const std::optional<Placement>& p, const LaunchSpec& s) {
  Rendered r;
  r.argv.push_back("mpiexec");
  for (const auto& a : fixed_args(m, l)) r.argv.push_back(a);
  std::string depth_flag = m.launcher == l.kind && !m.cpus_per_task_flag.empty()
                               ? m.cpus_per_task_flag
                               : "--depth";
  r.argv.insert(r.argv.end(), {"-n", std::to_string(s.tasks)});
  if (p) {
    // Spread over the named hosts: their core sets say which cores a task gets on
    // which host, so the hosts cannot be packed as full as the machine allows.
    int nodes = static_cast<int>(p->nodes.size());
    int ppn = (s.tasks + nodes - 1) / nodes;
    if (s.tasks < nodes) {
      return fail(Errc::kRefused,
                  fmt::format("{} task(s) cannot be spread over {} hosts: a host would run none",
                              s.tasks, nodes));
    }
    BERTH_CHECK(require_same_cores(*p, "PALS --cpu-bind list:"));
    if (static_cast<int>(p->cores[0].size()) < ppn * s.cpus_per_task) {
      return fail(Errc::kRefused,
                  fmt::format("{} task(s) per host of {} core(s) need {} cores, but the "
                              "placement gives each host {} ({})",
                              ppn, s.cpus_per_task, ppn * s.cpus_per_task, p->cores[0].size(),
                              idset::encode_ids(p->cores[0])));
    }
    r.argv.insert(r.argv.end(), {"--ppn", std::to_string(ppn), "--hosts", str::join(p->nodes, ",")});
    r.argv.insert(r.argv.end(), {depth_flag, std::to_string(s.cpus_per_task)});
    std::vector<std::string> entries;
    for (int j = 0; j < ppn; ++j) {
      auto tc = task_cores(p->cores[0], j, s.cpus_per_task);
      std::vector<std::string> ids;
      for (int c : tc) ids.push_back(std::to_string(c));
      entries.push_back(str::join(ids, ","));
    }
    r.argv.insert(r.argv.end(), {"--cpu-bind", "list:" + str::join(entries, ":")});
    KeptBinding kb = kept_binding(m.binding, l, true, false);
    r.notes = kb.notes;
    for (const auto& w : kb.words) r.argv.push_back(w);
    std::string var = pals_gpu_variable(m);
    if (p->gpus > 0) {
      if (p->gpu_ids.empty()) {
        return fail(Errc::kRefused,
                    fmt::format("PALS assigns no GPUs: a placement asking for {} GPU(s) must "
                                "name their device ids (--gpu-ids)",
                                p->gpus));
      }
      if (var.empty()) {
        return fail(Errc::kRefused,
                    fmt::format("machine '{}' names no GPU visibility variable", m.name));
      }
      r.argv.insert(r.argv.end(), {"--env", var + "=" + str::join(p->gpu_ids, ",")});
      if (auto h = topo::gpu_hierarchy_env(var, p->gpu_ids)) {
        r.argv.insert(r.argv.end(), {"--env", h->first + "=" + h->second});
      }
    } else if (!var.empty()) {
      // None, explicitly: set rather than left inherited.
      r.argv.insert(r.argv.end(), {"--env", var + "="});
    }
    r.mechanism = Mechanism::kCpuBinding;
  } else {
    int max_tasks = m.launcher == l.kind && m.max_tasks_per_node.value
                        ? static_cast<int>(*m.max_tasks_per_node.value)
                        : s.tasks;
    r.argv.insert(r.argv.end(), {"--ppn", std::to_string(std::min(s.tasks, max_tasks))});
    r.argv.insert(r.argv.end(), {depth_flag, std::to_string(s.cpus_per_task)});
    KeptBinding kb = kept_binding(m.binding, l, false, false);
    r.notes = kb.notes;
    for (const auto& w : kb.words) r.argv.push_back(w);
  }
  // PALS's mpiexec wires its ranks up itself (PMI), whatever is asked: say so when
  // something else was.
  r.wireup = "PALS mpiexec";
  if (s.mpi != wireup::Mode::kAuto) {
    r.notes.push_back(
        fmt::format("--mpi {} is not rendered: PALS mpiexec serves its own PMI "
                    "wire-up to every launch",
                    wireup::mode_name(s.mpi)));
  }
  r.memory_cap = cap_state(s, l);
  if (r.memory_cap == CapState::kNotEnforced) {
    r.notes.push_back(fmt::format(
        "the memory cap of {} MB is not rendered: PALS mpiexec has no memory option",
        *s.memory_cap));
  }
  for (const auto& w : s.command) r.argv.push_back(w);
  return r;
}

Result<Rendered> render_local(const topo::MachineDescription& m, const Launcher& l,
                              const std::optional<Placement>& p, const LaunchSpec& s) {
  Rendered r;
  r.argv = s.command;
  r.wireup = s.mpi == wireup::Mode::kNone ? "none" : "berth (PMIx, PMI)";
  r.memory_cap = cap_state(s, l);
  if (r.memory_cap == CapState::kNotEnforced) {
    r.notes.push_back(fmt::format(
        "the memory cap of {} MB is not rendered: the local launcher sets no memory limit",
        *s.memory_cap));
  }
  if (!p) return r;
  // Where an MPI launcher was looked for (Grid Engine, LSF, a hostfile: spec 02 §8) and
  // none can place, what was found goes with the refusal.
  const std::string no_mpi = l.kind == LauncherKind::kLocal && !l.version_text.empty()
                                 ? " (" + l.version_text + ")"
                                 : "";
  if (p->nodes.size() != 1) {
    return fail(Errc::kRefused,
                fmt::format("the local launcher places on this node only; the placement names "
                            "{} nodes{}",
                            p->nodes.size(), no_mpi));
  }
  if (s.tasks != 1) {
    return fail(Errc::kRefused,
                fmt::format("the local launcher starts one process, not {} tasks{}", s.tasks,
                            no_mpi));
  }
  if (static_cast<int>(p->cores[0].size()) < s.cpus_per_task) {
    return fail(Errc::kRefused,
                fmt::format("{} cpus per task do not fit in the placement's cores ({})",
                            s.cpus_per_task, idset::encode_ids(p->cores[0])));
  }
  r.bind_cpus = p->cores[0];
  std::string var = !m.gpu_visibility_variable.empty() ? m.gpu_visibility_variable
                    : !s.local_gpu_variable.empty()     ? s.local_gpu_variable
                                                        : "CUDA_VISIBLE_DEVICES";
  if (p->gpus > 0 && p->gpu_ids.empty()) {
    return fail(Errc::kRefused,
                fmt::format("nothing assigns GPUs on the local node: a placement asking for "
                            "{} GPU(s) must name their device ids (--gpu-ids)",
                            p->gpus));
  }
  r.env.emplace_back(var, str::join(p->gpu_ids, ","));
  if (auto h = topo::gpu_hierarchy_env(var, p->gpu_ids)) r.env.push_back(std::move(*h));
  r.mechanism = Mechanism::kCpuBinding;
  return r;
}

}  // namespace

Result<Rendered> render(const topo::MachineDescription& machine, const Launcher& launcher,
                        const std::optional<Placement>& placement, const LaunchSpec& spec) {
  if (spec.tasks < 1 || spec.cpus_per_task < 1) {
    return fail(Errc::kInvalidInput,
                fmt::format("tasks ({}) and cpus per task ({}) must be at least 1", spec.tasks,
                            spec.cpus_per_task));
  }
  if (spec.memory_cap && *spec.memory_cap <= 0) {
    return fail(Errc::kInvalidInput,
                fmt::format("a memory cap must be a positive number of MB, not {}",
                            *spec.memory_cap));
  }
  if (spec.command.empty()) return fail(Errc::kInvalidInput, "no command to launch");
  if (placement) {
    BERTH_CHECK(placement->validate());
    if (std::string why = placement_refusal(launcher); !why.empty()) {
      return fail(Errc::kRefused, "placement refused: " + why);
    }
  }
  switch (launcher.kind) {
    case LauncherKind::kSrun: return render_srun(machine, launcher, placement, spec);
    case LauncherKind::kPalsMpiexec: return render_pals(machine, launcher, placement, spec);
    case LauncherKind::kLocal: return render_local(machine, launcher, placement, spec);
    case LauncherKind::kMpirun:
    case LauncherKind::kHydra:
      // One task on this node alone is berth's to start and bind (spec 02 §8).
      if (keeps_local_rendering(launcher, placement, spec)) {
        return render_local(machine, launcher, placement, spec);
      }
      return render_mpi(machine, launcher, placement, spec);
  }
  return fail(Errc::kInternal, "unknown launcher kind");
}

std::string shell_line(const Rendered& r) {
  std::vector<std::string> words;
  for (const auto& [k, v] : r.env) words.push_back(k + "=" + str::shell_quote(v));
  if (!r.bind_cpus.empty()) {
    words.push_back("taskset");
    words.push_back("--cpu-list");
    words.push_back(idset::encode_ids(r.bind_cpus));
  }
  for (const auto& w : r.argv) words.push_back(str::shell_quote(w));
  return str::join(words, " ");
}

}  // namespace berth::place
