// Launcher: which launcher is actually present, and what it can enforce (spec 02 §3).
//
// The mechanism is determined at run time, from the launcher actually present, never
// from configuration: a machine can be upgraded across the Slurm 20.11 boundary without
// its configuration changing, and a stale assumption there fails in the worst way — the
// command is accepted and the placement silently does nothing.
// So the kind comes from the machine (or --launcher), but the version comes from
// running `srun --version` / `mpiexec --version`, once per process. An unreadable
// version is kept as unknown, and a placement on an unknown version is refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/machine.h"
#include "util/result.h"

namespace berth::place {

struct Version {
  int major = 0;
  int minor = 0;
  bool at_least(int maj, int min) const {
    return major > maj || (major == maj && minor >= min);
  }
};

// Slurm release where a step started reserving what it asks for (--exact), and where
// a step's --mem was measured to be enforced. Two constants, though equal today: the
// memory boundary is a proxy (enforcement comes from a site's cgroup configuration),
// and is kept apart so it can move on its own.
inline constexpr Version kSlurmStepIsolation{20, 11};
inline constexpr Version kSlurmMemoryEnforced{20, 11};

struct Launcher {
  topo::LauncherKind kind = topo::LauncherKind::kLocal;
  std::string program;                 // "srun", "mpiexec"; "" for local
  std::optional<Version> version;      // srun: the Slurm version; absent = unknown
  std::string version_text;            // what --version printed (first line), or why not
  bool is_pals = false;                // mpiexec: its --version says PALS
  std::string detected_by;             // "srun --version", "--slurm-version 20.02", ...
  // srun: the MPI plugins `srun --mpi=list` names (spec 07 §4), asked at run time like
  // the version; nullopt when not asked or unreadable, with the reason in mpi_text.
  std::optional<std::vector<std::string>> mpi_plugins;
  std::string mpi_text;
  // mpirun and hydra (spec 02 §8, place/mpi_launcher.h), set when one is chosen: the
  // allocation whose nodes it starts ranks on ("gridengine", "lsf", "hosts"), which
  // decides how it reaches them; this node's name there ("" when the allocation does
  // not hold it), where a launch of one task keeps the local rendering; and why it
  // cannot place ("" when it can: found, a version berth renders for, a way to reach
  // the allocation's nodes).
  std::string allocation;
  std::string here;
  std::string mpi_refusal;
  // mpirun: where its rankfiles are written (render_mpi.h): the TMPDIR of the
  // environment berth was given, else /tmp.
  std::string tmpdir;
};

enum class Mechanism { kSchedulerEnforced, kCpuBinding, kNone };
enum class CapSupport { kEnforced, kNone };
const char* mechanism_name(Mechanism m);   // "scheduler-enforced", "cpu-binding", "none"
const char* cap_support_name(CapSupport c);  // "enforced", "none"

// What a placement on this launcher gets. kNone when it cannot be placed at all
// (an unknown version, an mpiexec that is not PALS).
Mechanism placement_support(const Launcher& l);
CapSupport memory_cap_support(const Launcher& l);
// Why placement_support() is kNone ("" otherwise), for the refusal message.
std::string placement_refusal(const Launcher& l);

// Why a launch placed on `node` cannot be started from `here` (this node's name) with
// `l`, or "" when it can: this node itself, or any node of the allocation when the
// launcher reaches other nodes (srun, PALS mpiexec, an mpirun or hydra that can place).
// A node nothing reaches is refused rather than run on this node under its name
// (spec 02 §7).
std::string unreachable(const Launcher& l, std::string_view node, std::string_view here);

// Reads "slurm 22.05.8" / "slurm-wlm 20.02.7" (first line of srun --version).
std::optional<Version> parse_slurm_version(std::string_view text);
// Reads a --slurm-version flag value: "20.11", "22.05.8".
Result<Version> parse_version_flag(std::string_view text);
// The plugin names in `srun --mpi=list` output ("MPI plugin types are...", one indented
// name a line, "specific pmix plugin versions available: pmix_v4"); nullopt when the
// text has no plugin line.
std::optional<std::vector<std::string>> parse_mpi_plugins(std::string_view text);
// Whether `mpiexec --version` output is HPE/Cray PALS's.
bool looks_like_pals(std::string_view text);

// Runs a short command and returns what it printed (stdout and stderr). The seam
// that lets detection be tested without a launcher. place starts no process (launch is
// its sibling, not its dependency): the real probe, pipeline::CaptureProbe, runs the
// command through launch::capture, and the CLI hands it in.
class VersionProbe {
 public:
  virtual ~VersionProbe() = default;
  // Fails (kNotFound) when the program is not on PATH, (kIo) when it could not run
  // or did not finish within a few seconds.
  virtual Result<std::string> run(const std::vector<std::string>& argv) = 0;
};

// Detects the launcher of `kind` with `probe`. Never fails: a launcher that is
// missing or unreadable is returned with no version and the reason in version_text.
Launcher detect_launcher(topo::LauncherKind kind, VersionProbe& probe);

// detect_launcher(), cached per process and kind: `probe` runs only on the first call
// for a kind.
const Launcher& detect_launcher_cached(topo::LauncherKind kind, VersionProbe& probe);

}  // namespace berth::place
