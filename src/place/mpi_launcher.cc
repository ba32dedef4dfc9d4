#include "place/mpi_launcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "place/context.h"
#include "util/strings.h"

namespace berth::place {
namespace {

using topo::LauncherKind;

// "4.1.4" -> {4, 1}.
std::optional<Version> version_of(std::string_view word) {
  auto v = parse_version_flag(word);
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::string first_line(std::string_view text) {
  return str::printable(str::trim(text.substr(0, text.find('\n'))), 120);
}

// The allocation as people name it: "Grid Engine's", "LSF's", "a hostfile's".
std::string whose(std::string_view allocation) {
  if (allocation == "gridengine") return "Grid Engine's";
  if (allocation == "lsf") return "LSF's";
  if (allocation == "hosts") return "a hostfile's";
  if (allocation.empty()) return "no scheduler's";
  return fmt::format("{}'s", allocation);
}

const char* kind_words(LauncherKind k) {
  return k == LauncherKind::kMpirun ? "Open MPI's mpirun" : "MPICH's hydra";
}

bool has(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// Why `l` (found, of kind kMpirun or kHydra, `v` its version) cannot place in an
// allocation owned by `allocation`, or "" when it can. Open MPI is asked about LSF only
// under LSF: ompi_info takes a quarter of a second, and the rsh component that Grid
// Engine's and ssh's launches go through is built into every Open MPI (it needs nothing
// outside Open MPI to build).
std::string refusal(const Launcher& l, const MpiVersion& v, std::string_view allocation,
                    VersionProbe& probe) {
  if (l.kind == LauncherKind::kMpirun) {
    // Open MPI 3 and 4 start their ranks with ORTE, whose options berth renders (measured
    // on 4.1.4); Open MPI 5's mpirun is PRRTE's, whose MCA options and rankfile differ.
    if (!v.version || v.version->major < 3 || v.version->major > 4) {
      return fmt::format(
          "berth renders for the mpirun of Open MPI 3 and 4 (ORTE), and this is "
          "'{}'; Open MPI 5's mpirun (PRRTE) takes other options",
          v.text);
    }
    auto plm = openmpi_plm(allocation);
    if (!plm) {
      return fmt::format(
          "berth renders mpirun for Grid Engine, LSF and hostfile allocations, "
          "and this one is {}",
          whose(allocation));
    }
    if (*plm == "lsf") {
      auto out = probe.run({"ompi_info", "--parsable", "--param", "plm", "all", "--level", "1"});
      if (!out.ok()) {
        return fmt::format("whether this Open MPI has LSF's launch is unknown ({})",
                           out.error().message());
      }
      auto plms = parse_ompi_plm(*out);
      if (!has(plms, "lsf")) {
        return fmt::format(
            "this Open MPI was built without LSF's launch (ompi_info lists plm: "
            "{}): its ranks would start outside LSF",
            plms.empty() ? "none" : str::join(plms, ", "));
      }
    }
    return "";
  }
  auto launcher = hydra_launcher(allocation);
  if (!launcher) {
    return fmt::format(
        "berth renders hydra for Grid Engine, LSF and hostfile allocations, and "
        "this one is {}",
        whose(allocation));
  }
  if (!v.launchers) {
    return fmt::format("'{}' names no launchers, so whether it has '{}' is unknown", v.text,
                       *launcher);
  }
  if (!has(*v.launchers, *launcher)) {
    return fmt::format("this hydra has no '{}' launcher (Launchers available: {})", *launcher,
                       str::join(*v.launchers, " "));
  }
  return "";
}

}  // namespace

MpiVersion parse_mpi_version(std::string_view text) {
  MpiVersion v;
  std::string_view line = str::trim(text.substr(0, text.find('\n')));
  // Open MPI: "mpirun (Open MPI) 4.1.4", "mpiexec (OpenRTE) 4.1.4".
  if (line.find("(Open MPI)") != std::string_view::npos ||
      line.find("(OpenRTE)") != std::string_view::npos) {
    auto words = str::split_ws(line);
    v.kind = LauncherKind::kMpirun;
    v.text = str::printable(line, 120);
    if (!words.empty()) v.version = version_of(words.back());
    return v;
  }
  // MPICH's hydra: "HYDRA build details:", then indented "Key: value" lines.
  if (line.find("HYDRA build details") == std::string_view::npos) return v;
  v.kind = LauncherKind::kHydra;
  std::string version;
  for (std::string_view l : str::split(text, '\n')) {
    l = str::trim(l);
    size_t colon = l.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = str::trim(l.substr(0, colon));
    std::string_view value = str::trim(l.substr(colon + 1));
    if (key == "Version") {
      version = str::printable(value, 40);
      v.version = version_of(value);
    } else if (key == "Launchers available") {
      std::vector<std::string> names;
      for (auto w : str::split_ws(value)) names.emplace_back(w);
      v.launchers = std::move(names);
    }
  }
  v.text = version.empty() ? "hydra (no version)" : "hydra " + version;
  return v;
}

std::vector<std::string> parse_ompi_plm(std::string_view text) {
  std::vector<std::string> names;
  for (std::string_view line : str::split(text, '\n')) {
    line = str::trim(line);
    if (line.rfind("mca:plm:", 0) != 0) continue;
    std::string_view rest = line.substr(8);
    std::string_view name = rest.substr(0, rest.find(':'));
    if (name.empty() || name == "base") continue;
    if (!has(names, name)) names.emplace_back(name);
  }
  return names;
}

std::optional<std::string> openmpi_plm(std::string_view allocation) {
  // Open MPI's rsh component is its Grid Engine launch: inside a parallel environment
  // job it starts its daemons with `qrsh -inherit` (unless plm_rsh_disable_qrsh), so
  // Grid Engine accounts for them and ends them with the job.
  if (allocation == "gridengine" || allocation == "hosts") return "rsh";
  if (allocation == "lsf") return "lsf";
  return std::nullopt;
}

std::optional<std::string> hydra_launcher(std::string_view allocation) {
  if (allocation == "gridengine") return "sge";
  if (allocation == "lsf") return "lsf";
  if (allocation == "hosts") return "ssh";
  return std::nullopt;
}

Launcher detect_mpi_launcher(std::optional<LauncherKind> want, std::string_view allocation,
                             std::string_view here, VersionProbe& probe) {
  std::vector<std::string> programs;
  if (!want) {
    programs = {"mpirun", "mpiexec.hydra", "mpiexec"};
  } else if (*want == LauncherKind::kMpirun) {
    programs = {"mpirun", "mpirun.openmpi"};
  } else {
    programs = {"mpiexec.hydra", "mpiexec", "mpirun"};
  }
  std::vector<std::string> asked;
  std::vector<std::string> seen;
  for (const auto& program : programs) {
    asked.push_back(program + " --version");
    auto out = probe.run({program, "--version"});
    if (!out.ok()) {
      seen.push_back(out.error().message());
      continue;
    }
    MpiVersion v = parse_mpi_version(*out);
    if (v.kind == LauncherKind::kLocal) {
      seen.push_back(fmt::format("{} --version: '{}' is neither Open MPI's nor hydra's", program,
                                 first_line(*out)));
      continue;
    }
    if (want && v.kind != *want) {
      seen.push_back(
          fmt::format("{} --version: '{}' is not {}", program, v.text, kind_words(*want)));
      continue;
    }
    Launcher l;
    l.kind = v.kind;
    l.program = program;
    l.detected_by = program + " --version";
    l.version_text = v.text;
    l.allocation = std::string(allocation);
    l.here = std::string(here);
    l.mpi_refusal = refusal(l, v, allocation, probe);
    return l;
  }
  std::string what = fmt::format("no MPI launcher found ({})", str::join(seen, "; "));
  Launcher l;
  l.detected_by = str::join(asked, ", ");
  l.allocation = std::string(allocation);
  l.here = std::string(here);
  if (!want) {
    l.version_text = what;  // the local launcher, saying what was looked for
    return l;
  }
  l.kind = *want;
  l.program = programs.front();
  l.version_text = str::join(seen, "; ");
  l.mpi_refusal = fmt::format("{} was not found ({})", kind_words(*want), l.version_text);
  return l;
}

const Launcher& detect_mpi_launcher_cached(std::optional<LauncherKind> want,
                                           std::string_view allocation, std::string_view here,
                                           VersionProbe& probe) {
  using Key = std::tuple<int, std::string, std::string>;
  static std::mutex mu;
  static std::map<Key, Launcher> cache;
  std::lock_guard<std::mutex> lock(mu);
  Key key{want ? static_cast<int>(*want) : -1, std::string(allocation), std::string(here)};
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, detect_mpi_launcher(want, allocation, here, probe)).first;
  }
  return it->second;
}

std::optional<Result<Context>> choose_mpi_launcher(Context& c, const MachineOptions& m,
                                                   VersionProbe& probe) {
  const std::string& name = m.launcher;
  if (name == "mpirun" || name == "hydra") {
    if (!m.slurm_version.empty()) {
      return Result<Context>(
          fail(Errc::kInvalidInput, "--slurm-version: the launcher is not srun"));
    }
    LauncherKind want = name == "mpirun" ? LauncherKind::kMpirun : LauncherKind::kHydra;
    c.launcher = detect_mpi_launcher_cached(want, c.allocation.owner, c.here(), probe);
    c.launcher.tmpdir = c.env.get("TMPDIR").value_or("");
    c.launcher_reason = "--launcher " + name;
    return Result<Context>(std::move(c));
  }
  if (!name.empty() && name != "auto" && name != "srun" && name != "pals" && name != "local") {
    return Result<Context>(
        fail(Errc::kInvalidInput,
             fmt::format("--launcher: '{}' is none of auto, srun, pals, local, mpirun and hydra",
                         str::printable(name))));
  }
  // Auto: only where no scheduler's launcher reaches the nodes and the machine names
  // none of its own; --slurm-version asks for srun, which the rules after this decide.
  const std::string& owner = c.allocation.owner;
  if ((!name.empty() && name != "auto") || !m.slurm_version.empty()) return std::nullopt;
  if (owner != "gridengine" && owner != "lsf" && owner != "hosts") return std::nullopt;
  if (c.machine == nullptr || c.machine->launcher != LauncherKind::kLocal) return std::nullopt;
  // A hostfile of this node alone (berth's default, no file at all) is berth's own
  // node: its launches are berth's, and nothing is asked.
  if (owner == "hosts") {
    const auto up = c.allocation.up_nodes();
    if (std::none_of(up.begin(), up.end(), [](const alloc::Node* n) { return !n->local; })) {
      return std::nullopt;
    }
  }
  const Launcher& found = detect_mpi_launcher_cached(std::nullopt, owner, c.here(), probe);
  if (found.kind != LauncherKind::kLocal && found.mpi_refusal.empty()) {
    c.launcher = found;
    c.launcher.tmpdir = c.env.get("TMPDIR").value_or("");
    c.launcher_reason =
        fmt::format("the allocation is {} and {} is present", whose(owner), found.program);
    return Result<Context>(std::move(c));
  }
  // Nothing that can place: the local launcher, saying what was looked for and why it
  // does not reach the other nodes.
  c.launcher = Launcher();
  c.launcher.detected_by = found.detected_by;
  c.launcher.version_text = found.kind == LauncherKind::kLocal
                                ? found.version_text
                                : fmt::format("{} found ('{}') cannot place here: {}",
                                              found.program, found.version_text, found.mpi_refusal);
  c.launcher_reason = fmt::format(
      "the machine's launcher: the allocation is {} and no MPI "
      "launcher that can place is present",
      whose(owner));
  return Result<Context>(std::move(c));
}

}  // namespace berth::place
