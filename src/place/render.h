// Renderers: a placement, for the machine's own launcher (spec 02 §2).
//
// Each renderer is a pure function of (machine, launcher, placement, tasks, cpus per
// task, memory cap, command) to an argv and an environment, with a report of what
// will be enforced. Each case was established by measurement:
//
// Every launcher is asked for the MPI wire-up the launch needs (spec 07 §4): srun for
// the plugin `srun --mpi=list` says it has (pmix before pmi2), never one assumed.
//
//   Slurm >= 20.11  exactly the resources needed (--exact), the nodes named, the GPU
//                   total (--gpus=0 for none: an unstated GPU requirement is a claim on
//                   every GPU), the cap as --mem=<N>M. Scheduler-enforced.
//   Slurm <  20.11  --exact and --gpus do not exist (passing them is an error), so
//                   one CPU mask per task, tasks filling each node in turn; GPUs are
//                   refused; the cap is never rendered (it is inert there). CPU-binding.
//   PBS/PALS        --hosts, --cpu-bind list: with one node's entries (PALS applies the
//                   list to each node's ranks; nodes asking for different core numbers
//                   are refused), tasks spread over the named hosts, GPU visibility as
//                   two arguments --env VAR=VALUE (never --env-remove: Aurora's PALS
//                   rejects it), never the cap. CPU-binding.
//   local           the command itself, with berth binding the process tree to the
//                   core set and the GPU visibility variable set. CPU-binding.
//   mpirun, hydra   the MPI implementation's own launcher under Grid Engine, LSF and
//                   hostfiles (place/render_mpi.h); one task on this node alone keeps
//                   the local rendering. CPU-binding.
//
// Without a placement every renderer produces exactly the command it would produce
// had placement never existed. A machine's own binding options are kept only where
// they do not contradict a placement: values that name resources (lists, masks, maps)
// are dropped, and so is a gpu_bind of none (measured: kept beside a placement it
// gave 3 of 4 launches on Perlmutter GPU no GPU at all, and they exited 0).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "place/launcher.h"
#include "place/placement.h"
#include "topo/machine.h"
#include "util/result.h"
#include "wireup/mode.h"

namespace berth::place {

struct LaunchSpec {
  int tasks = 1;
  int cpus_per_task = 1;
  MemoryCap memory_cap;               // MB per node; absent unless stated
  std::vector<std::string> command;   // argv of the work itself
  // The GPU visibility variable for the local launcher when the machine names none
  // (from the node's GPU vendor); "" means CUDA_VISIBLE_DEVICES.
  std::string local_gpu_variable;
  // The MPI wire-up the tasks need (spec 07 §4). Under auto a launch of one task asks
  // for none; under a named mode a launcher that cannot give it refuses the launch.
  wireup::Mode mpi = wireup::Mode::kAuto;
};

// What became of a memory cap: rendered and kept, stated but not kept (reported, not
// rendered), or never stated.
enum class CapState { kEnforced, kNotEnforced, kAbsent };
const char* cap_state_name(CapState s);  // "enforced", "not-enforced", "absent"

struct Rendered {
  std::vector<std::string> argv;
  // Variables to set for the launch (local launcher); others carry them in argv.
  std::vector<std::pair<std::string, std::string>> env;
  // Local launcher: the CPU ids berth binds the launched process tree to.
  std::vector<int> bind_cpus;
  Mechanism mechanism = Mechanism::kNone;  // kNone without a placement
  CapState memory_cap = CapState::kAbsent;
  // Who wires the tasks up: "srun --mpi=pmix", "PALS mpiexec", "berth (PMIx, PMI)",
  // "none"; "" when nothing was asked for (one task under auto).
  std::string wireup;
  // What was dropped or decided, for people ("dropped the machine's gpu_bind=none").
  std::vector<std::string> notes;
};

// Renders a launch. Fails (kRefused) when the placement cannot be honoured on this
// launcher — with the reason — and (kInvalidInput) on a malformed placement or spec.
Result<Rendered> render(const topo::MachineDescription& machine, const Launcher& launcher,
                        const std::optional<Placement>& placement, const LaunchSpec& spec);

// The argv and environment as one line a shell would run, each word quoted only
// when it needs to be.
std::string shell_line(const Rendered& r);

}  // namespace berth::place
