// MPI launchers: Open MPI's mpirun and MPICH's hydra, where no scheduler's launcher
// starts tasks on other nodes (spec 02 §8).
//
// Under Grid Engine, LSF or a hostfile there is no srun: what starts ranks on the
// allocation's other nodes is the MPI implementation's own launcher — mpirun through
// Grid Engine's `qrsh -inherit`, LSF's own launch or ssh; hydra the same through
// `-launcher sge|lsf|ssh`. Which one is present is found at run time, as srun's version
// is, never configured: `mpirun --version` ("mpirun (Open MPI) 4.1.4"),
// `mpiexec.hydra --version` ("HYDRA build details: … Launchers available: ssh rsh fork
// slurm ll lsf sge …"), `mpiexec --version` (either). Under LSF, Open MPI is also asked
// (`ompi_info`) whether it was built with LSF's launch; hydra's --version says which
// launchers it has. A launcher that cannot place here is never guessed around: it says
// why (Launcher::mpi_refusal), and every placement on it is refused with that reason.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "place/launcher.h"
#include "topo/machine.h"
#include "util/result.h"

namespace berth::place {

struct Context;
struct MachineOptions;

// What a launcher's --version says: Open MPI's mpirun (kMpirun), MPICH's hydra
// (kHydra), or neither (kLocal).
struct MpiVersion {
  topo::LauncherKind kind = topo::LauncherKind::kLocal;
  std::string text;                // for people: "mpirun (Open MPI) 4.1.4", "hydra 4.0.2"
  std::optional<Version> version;  // major.minor, when the text gave one
  // hydra: the launchers its "Launchers available:" line names; nullopt without one.
  std::optional<std::vector<std::string>> launchers;
};
MpiVersion parse_mpi_version(std::string_view text);

// The plm components `ompi_info --parsable --param plm all --level 1` lists
// ("mca:plm:rsh:version:…" lines), in order, each once.
std::vector<std::string> parse_ompi_plm(std::string_view text);

// How each launcher reaches the nodes of an allocation owned by `allocation`: Open MPI's
// plm component ("rsh" for Grid Engine — its qrsh path — and for hostfiles over ssh,
// "lsf") and hydra's -launcher ("sge", "lsf", "ssh"); nullopt for an allocation berth
// renders neither for (Slurm's, PBS's, Flux's: their own launchers reach their nodes).
std::optional<std::string> openmpi_plm(std::string_view allocation);
std::optional<std::string> hydra_launcher(std::string_view allocation);

// Finds the MPI launcher `want` (kMpirun or kHydra) or, when nullopt, whichever is
// present — `mpirun` first: Debian's alternatives point mpirun and mpicc at one
// implementation, so a program built with plain mpicc is started by plain mpirun — for
// an allocation owned by `allocation` holding this node as `here`. Never fails: a
// launcher that is missing, unreadable, of a version berth does not render for, or
// without a way to reach the allocation's nodes comes back with mpi_refusal saying so.
// With `want` nullopt and nothing found, the local launcher comes back, version_text
// saying what was asked and found.
Launcher detect_mpi_launcher(std::optional<topo::LauncherKind> want, std::string_view allocation,
                             std::string_view here, VersionProbe& probe);

// detect_mpi_launcher(), cached per process for each (want, allocation, here).
const Launcher& detect_mpi_launcher_cached(std::optional<topo::LauncherKind> want,
                                           std::string_view allocation, std::string_view here,
                                           VersionProbe& probe);

// The launcher of `c` (its allocation and machine already read) when an MPI launcher
// decides it: `--launcher mpirun|hydra`, or auto under Grid Engine, LSF, or a hostfile
// naming a node other than this one, on a machine whose own launcher is local. Under
// auto, a launcher found that cannot place here leaves the local launcher, its
// version_text saying why. Sets c.launcher and c.launcher_reason and hands `c` back;
// nullopt when the other rules decide (build_context goes on with `c` untouched). Fails
// on a --launcher that is none of auto, srun, pals, local, mpirun and hydra.
std::optional<Result<Context>> choose_mpi_launcher(Context& c, const MachineOptions& m,
                                                   VersionProbe& probe);

}  // namespace berth::place
