#include "place/render_mpi.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "place/mpi_launcher.h"
#include "topo/gpus.h"
#include "util/files.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::place {
namespace {

using topo::LauncherKind;

bool is_openmpi(const Launcher& l) { return l.kind == LauncherKind::kMpirun; }

// Who wires the ranks up, as Rendered::wireup says it.
const char* wireup_name(const Launcher& l) { return is_openmpi(l) ? "mpirun (Open MPI)" : "hydra"; }

// The allocation, for messages: "a Grid Engine allocation".
std::string allocation_words(std::string_view a) {
  if (a == "gridengine") return "a Grid Engine allocation";
  if (a == "lsf") return "an LSF allocation";
  if (a == "hosts") return "a hostfile allocation";
  return fmt::format("the {} allocation", a);
}

// The cores of local task j on a node: the j-th run of cpus_per_task ids.
std::vector<int> task_cores(const std::vector<int>& node_cores, int j, int c) {
  auto b = node_cores.begin() + static_cast<std::ptrdiff_t>(j) * c;
  return std::vector<int>(b, b + c);
}

// "a:2,b:1": each node and the tasks it runs, as both launchers take hosts.
std::string hosts_with_counts(const Placement& p, const std::vector<int>& per_node) {
  std::vector<std::string> hosts;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    hosts.push_back(fmt::format("{}:{}", p.nodes[i], per_node[i]));
  }
  return str::join(hosts, ",");
}

// The wire-up (spec 07 §4): each launcher serves its own implementation's, whatever
// is asked; a mode it cannot give is refused, one it gives anyway (none) is said.
Result<void> add_wireup(const Launcher& l, const LaunchSpec& s, Rendered& r) {
  using wireup::Mode;
  r.wireup = wireup_name(l);
  const bool ompi = is_openmpi(l);
  switch (s.mpi) {
    case Mode::kAuto:
      return Ok{};
    case Mode::kNone:
      r.notes.push_back(
          fmt::format("--mpi none is not rendered: {} wires its ranks up itself", wireup_name(l)));
      return Ok{};
    case Mode::kPmix:
      if (ompi) return Ok{};
      return fail(Errc::kRefused,
                  "--mpi pmix: hydra serves its ranks PMI-1 and PMI-2, not PMIx; an Open MPI "
                  "program needs Open MPI's mpirun (--launcher mpirun)");
    case Mode::kPmi1:
    case Mode::kPmi2:
      if (!ompi) return Ok{};
      return fail(Errc::kRefused,
                  fmt::format("--mpi {}: mpirun (Open MPI) serves its ranks PMIx, not PMI; an "
                              "MPICH program needs hydra (--launcher hydra)",
                              wireup::mode_name(s.mpi)));
  }
  return Ok{};
}

// The GPU visibility every rank gets: the placement's ids in the node's variable (and
// the hierarchy Level Zero's ids assume), or the variable set empty for none.
Result<std::vector<std::pair<std::string, std::string>>> gpu_env(const topo::MachineDescription& m,
                                                                 const Launcher& l,
                                                                 const Placement& p,
                                                                 const LaunchSpec& s) {
  std::string var = !m.gpu_visibility_variable.empty() ? m.gpu_visibility_variable
                    : !p.gpu_variable.empty()          ? p.gpu_variable
                    : !s.local_gpu_variable.empty()    ? s.local_gpu_variable
                                                       : "CUDA_VISIBLE_DEVICES";
  std::vector<std::pair<std::string, std::string>> env;
  if (p.gpus > 0 && p.gpu_ids.empty()) {
    return fail(Errc::kRefused,
                fmt::format("nothing assigns GPUs in {}: a placement asking for {} GPU(s) must "
                            "name their device ids (--gpu-ids)",
                            allocation_words(l.allocation), p.gpus));
  }
  env.emplace_back(var, str::join(p.gpu_ids, ","));
  if (auto h = topo::gpu_hierarchy_env(var, p.gpu_ids)) env.push_back(std::move(*h));
  return env;
}

// How Open MPI reaches the allocation's nodes, as MCA options (spec 02 §8).
Result<std::vector<std::string>> openmpi_reach(const Launcher& l) {
  auto plm = openmpi_plm(l.allocation);
  if (!plm) {
    return fail(Errc::kRefused, fmt::format("berth renders mpirun for Grid Engine, LSF and "
                                            "hostfile allocations, not for {}",
                                            allocation_words(l.allocation)));
  }
  std::vector<std::string> w = {"--mca", "plm", *plm};
  if (l.allocation == "gridengine") {
    // The rsh component's Grid Engine path: `qrsh -inherit` inside the job (said
    // explicitly, in case a site's defaults turn it off).
    w.insert(w.end(), {"--mca", "plm_rsh_disable_qrsh", "0"});
  } else if (l.allocation == "hosts") {
    // ssh, and never qrsh: a hostfile's nodes are not a Grid Engine job's.
    w.insert(w.end(), {"--mca", "plm_rsh_agent", "ssh", "--mca", "plm_rsh_disable_qrsh", "1"});
  }
  return w;
}

Result<Rendered> render_openmpi(const topo::MachineDescription& m, const Launcher& l,
                                const std::optional<Placement>& p, const LaunchSpec& s) {
  Rendered r;
  r.argv.push_back(l.program.empty() ? "mpirun" : l.program);
  BERTH_CHECK(add_wireup(l, s, r));  // before anything is written
  BERTH_TRY(std::vector<std::string> reach, openmpi_reach(l));
  if (!p) {
    r.argv.insert(r.argv.end(), {"-np", std::to_string(s.tasks)});
    r.argv.insert(r.argv.end(), reach.begin(), reach.end());
  } else {
    BERTH_TRY(std::vector<int> per_node, fill_nodes_in_turn(*p, s.tasks, s.cpus_per_task));
    BERTH_TRY(auto env, gpu_env(m, l, *p, s));
    BERTH_TRY(std::string rankfile,
              write_rankfile(openmpi_rankfile(*p, per_node, s.cpus_per_task), l.tmpdir));
    r.argv.insert(r.argv.end(),
                  {"--host", hosts_with_counts(*p, per_node), "-np", std::to_string(s.tasks)});
    r.argv.insert(r.argv.end(), reach.begin(), reach.end());
    // The rankfile's slot numbers as the OS numbers CPUs (berth's core ids), each rank
    // bound to exactly its own: see write_rankfile.
    r.argv.insert(r.argv.end(), {"--use-hwthread-cpus", "--mca", "rmaps_rank_file_physical", "1",
                                 "--rankfile", rankfile});
    for (const auto& [k, v] : env) r.argv.insert(r.argv.end(), {"-x", k + "=" + v});
    r.mechanism = Mechanism::kCpuBinding;
  }
  return r;
}

Result<Rendered> render_hydra(const topo::MachineDescription& m, const Launcher& l,
                              const std::optional<Placement>& p, const LaunchSpec& s) {
  Rendered r;
  r.argv.push_back(l.program.empty() ? "mpiexec.hydra" : l.program);
  BERTH_CHECK(add_wireup(l, s, r));
  auto launcher = hydra_launcher(l.allocation);
  if (!launcher) {
    return fail(Errc::kRefused, fmt::format("berth renders hydra for Grid Engine, LSF and "
                                            "hostfile allocations, not for {}",
                                            allocation_words(l.allocation)));
  }
  r.argv.insert(r.argv.end(), {"-launcher", *launcher});
  if (!p) {
    r.argv.insert(r.argv.end(), {"-n", std::to_string(s.tasks)});
  } else {
    BERTH_TRY(std::vector<int> per_node, fill_nodes_in_turn(*p, s.tasks, s.cpus_per_task));
    // hydra applies one list to every node's ranks: nodes asking for different core ids
    // cannot be given theirs.
    for (size_t i = 1; i < p->nodes.size(); ++i) {
      if (p->cores[i] != p->cores[0]) {
        return fail(Errc::kRefused,
                    fmt::format("hydra -bind-to user: applies one node's core list to every "
                                "node, but node '{}' asks for cores {} and node '{}' for {}",
                                p->nodes[0], idset::encode_ids(p->cores[0]), p->nodes[i],
                                idset::encode_ids(p->cores[i])));
      }
    }
    BERTH_TRY(auto env, gpu_env(m, l, *p, s));
    int most = *std::max_element(per_node.begin(), per_node.end());
    std::vector<std::string> entries;
    for (int j = 0; j < most; ++j) {
      std::vector<std::string> ids;
      for (int c : task_cores(p->cores[0], j, s.cpus_per_task)) ids.push_back(std::to_string(c));
      entries.push_back(str::join(ids, "+"));
    }
    r.argv.insert(r.argv.end(),
                  {"-hosts", hosts_with_counts(*p, per_node), "-n", std::to_string(s.tasks),
                   "-bind-to", "user:" + str::join(entries, ",")});
    for (const auto& [k, v] : env) r.argv.insert(r.argv.end(), {"-genv", k, v});
    r.mechanism = Mechanism::kCpuBinding;
  }
  return r;
}

// FNV-1a, 64 bits: a stable name for a rankfile's text (the text is compared too).
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

bool keeps_local_rendering(const Launcher& l, const std::optional<Placement>& p,
                           const LaunchSpec& s) {
  if (s.tasks != 1) return false;
  if (!p) return true;
  return p->nodes.size() == 1 && !l.here.empty() && p->nodes[0] == l.here;
}

Result<Rendered> render_mpi(const topo::MachineDescription& m, const Launcher& l,
                            const std::optional<Placement>& p, const LaunchSpec& s) {
  if (l.kind != LauncherKind::kMpirun && l.kind != LauncherKind::kHydra) {
    return fail(Errc::kInternal, "render_mpi: not an MPI launcher");
  }
  auto r = is_openmpi(l) ? render_openmpi(m, l, p, s) : render_hydra(m, l, p, s);
  if (!r.ok()) return r;
  if (s.memory_cap) {
    r->memory_cap = CapState::kNotEnforced;
    r->notes.push_back(
        fmt::format("the memory cap of {} MB is not rendered: {} has no memory "
                    "option",
                    *s.memory_cap, is_openmpi(l) ? "mpirun" : "hydra"));
  }
  for (const auto& w : s.command) r->argv.push_back(w);
  return r;
}

std::string openmpi_rankfile(const Placement& p, const std::vector<int>& per_node,
                             int cpus_per_task) {
  std::string text;
  int rank = 0;
  for (size_t i = 0; i < p.nodes.size() && i < per_node.size(); ++i) {
    for (int j = 0; j < per_node[i]; ++j) {
      text += fmt::format("rank {}={} slot={}\n", rank++, p.nodes[i],
                          idset::encode_ids(task_cores(p.cores[i], j, cpus_per_task)));
    }
  }
  return text;
}

// Why a rankfile, and why written here.
//
// A rankfile because it is the one way Open MPI 4 takes each rank's own cores:
// `--cpu-set` gives one list for every node (nodes the pool gave different core ids
// could not have theirs), and beside `--bind-to core` binds each rank to one core, so
// ranks of several cores would need `--map-by slot:PE=C`, which picks the cores itself.
// The rankfile names every rank's cores exactly, whatever the nodes ask for: one
// mechanism for every placement. Its slot numbers are read as the OS numbers CPUs
// (`--use-hwthread-cpus` with `rmaps_rank_file_physical`), which berth's core ids are
// (the first hardware thread of each core, as the local launcher binds them); without
// hardware threads Open MPI reads a physical slot number as the kernel's core_id, which
// repeats across sockets.
//
// Written by the renderer because the rendered argv is all its callers run (`berth
// place --run`, a pipeline step on another node) and `berth place` prints a command to
// run later: the file must exist as soon as the command does. mpirun alone reads it, on
// this node (its daemons are sent the map), so it goes to this user's own directory
// under TMPDIR. Named by its text's hash: the same placement rendered twice is the same
// file, writers of one text write the same bytes (each by an atomic rename), and there
// is nothing to remove after a launch.
Result<std::string> write_rankfile(std::string_view text, std::string_view tmpdir) {
  std::string base = !tmpdir.empty() && tmpdir[0] == '/' ? std::string(tmpdir) : "/tmp";
  std::string dir = fmt::format("{}/berth-rankfiles.{}", base, ::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail(Errc::kIo, fmt::format("cannot create {} for Open MPI's rankfile: {}", dir,
                                       std::strerror(errno)));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 022) != 0) {
    return fail(Errc::kIo, fmt::format("{} is not this user's own directory (a directory of "
                                       "mode 0700 owned by uid {}): Open MPI's rankfile is not "
                                       "written there",
                                       dir, ::getuid()));
  }
  std::string path = fmt::format("{}/rankfile-{:016x}", dir, fnv1a(text));
  auto have = files::read_file(path, 1u << 24);
  if (have.ok() && *have == text) return path;
  auto wrote = files::write_file_atomic(path, text, /*sync=*/false, 0600);
  if (!wrote.ok()) return wrote.error().with_context("Open MPI's rankfile");
  return path;
}

}  // namespace berth::place
