// How a run starts its berth agents: the allocation's own launcher, once, for every
// node it will use (spec 08 §2).
//
//   slurm       one step for every node: srun --overlap --nodes=N --ntasks=N
//               --ntasks-per-node=1 --nodelist=… --mpi=none --cpu-bind=none
//               --input=all --kill-on-bad-exit=0 [--whole] [--external-launcher];
//               each agent takes its name from SLURMD_NODENAME
//   gridengine  per node: qrsh -inherit -V NODE …
//   lsf         per node: blaunch NODE …
//   pbs         per node: pbs_tmrsh NODE …
//   hosts       per node: ssh -T -o BatchMode=yes NODE … (a hostfile, --host)
// Why each flag: --overlap, so the agents' step never waits for (or blocks) the steps
// the run or the user start beside it; one task per node and no binding, so an agent
// may use every CPU the job has there; no MPI plugin, the agents are not an MPI job;
// --input=all, so every agent reads the run's requests; --kill-on-bad-exit=0, so one
// agent's death does not end the others; --whole (Slurm 22.05 and later, where it was
// tried), so the step holds every CPU of the job on the node; --external-launcher
// (Slurm 23.11 and later), which marks a step that starts other work.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "place/launcher.h"
#include "util/result.h"

namespace berth::place {

// --agents: auto (every node of a multi-node allocation but this one), off (none: a
// step on another node is one launcher call), all (this node's steps too).
enum class AgentsMode { kAuto, kOff, kAll };
Result<AgentsMode> parse_agents_mode(std::string_view text);

struct AgentLaunch {
  std::vector<std::string> argv;
  std::vector<std::string> nodes;  // the agents it starts, by node
  // Reads a line the launcher wrote on stderr: the node whose agent it says has ended
  // ("" for any other line). One srun serves every agent, and outlives the one that
  // died: its word is how the run learns at once, not after a silence.
  std::function<std::string(std::string_view)> ended;
};

// The node of srun's line for a task that ended ("srun: error: n3: task 2: Killed"),
// or "".
std::string srun_task_ended(std::string_view line);

// The launcher commands that start an agent (`agent`: berth's path and its words) on
// each of `nodes` in an allocation owned by `owner`; kUnsupported, saying why, where
// berth has no way to start one there.
Result<std::vector<AgentLaunch>> agent_launches(std::string_view owner, const Launcher& launcher,
                                                const std::vector<std::string>& nodes,
                                                const std::vector<std::string>& agent);

}  // namespace berth::place
