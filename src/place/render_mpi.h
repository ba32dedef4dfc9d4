// Renderers for the MPI implementations' own launchers: Open MPI's mpirun and MPICH's
// hydra, under Grid Engine, LSF and hostfile allocations (spec 02 §8).
//
//   Open MPI  `mpirun --host a:2,b:2 -np 4 --mca plm <how> --use-hwthread-cpus
//             --mca rmaps_rank_file_physical 1 --rankfile <file> -x VAR=ids cmd`:
//             every rank bound to its own cores by a rankfile (below), the nodes
//             reached through Grid Engine's qrsh (the rsh component's Grid Engine path),
//             LSF's own launch or ssh. Wire-up: mpirun's own PMIx.
//   hydra     `mpiexec.hydra -launcher sge|lsf|ssh -hosts a:2,b:2 -n 4
//             -bind-to user:0+1,2+3 -genv VAR ids cmd`: hydra applies one binding list
//             to each node's ranks (measured: the entries are indexed by the rank's
//             index on its node), so nodes asking for different core ids are refused,
//             as the PALS renderer refuses them. Wire-up: hydra's own PMI.
//
// Both: tasks fill each node in turn (spec 02 §1), the GPU visibility variable set for
// every rank (empty for none; GPUs need their device ids: nothing assigns them here),
// never a memory cap (neither launcher has one). Mechanism: cpu-binding.
#pragma once

#include <optional>

#include "place/launcher.h"
#include "place/placement.h"
#include "place/render.h"
#include "topo/machine.h"
#include "util/result.h"

namespace berth::place {

// Whether a launch keeps the local rendering under an MPI launcher: one task, placed
// on this node alone (Launcher::here) or not placed at all — berth starts and binds it
// itself, as it would with no MPI launcher present.
bool keeps_local_rendering(const Launcher& l, const std::optional<Placement>& p,
                           const LaunchSpec& s);

// Renders a launch for `l` (kMpirun or kHydra). Fails (kRefused) with the reason when the
// launcher cannot honour the placement or give the wire-up asked for, and (kIo) when
// Open MPI's rankfile cannot be written.
Result<Rendered> render_mpi(const topo::MachineDescription& m, const Launcher& l,
                            const std::optional<Placement>& p, const LaunchSpec& s);

// Open MPI's rankfile for a placement: "rank R=<node> slot=<cpu ids>" a line, ranks
// filling each node in turn, each its own run of cpus_per_task ids.
std::string openmpi_rankfile(const Placement& p, const std::vector<int>& per_node,
                             int cpus_per_task);

// Writes `text` as a rankfile and returns its path: in this user's own directory
// <tmpdir>/berth-rankfiles.<uid> (tmpdir "" or relative: /tmp; made 0700, refused when it
// is anyone else's or others may write in it), named by a hash of the text. Fails (kIo)
// naming the path.
Result<std::string> write_rankfile(std::string_view text, std::string_view tmpdir);

}  // namespace berth::place
