// The agent: what `berth agent` runs on each node of a run's allocation, started once
// by the run through the allocation's own launcher (spec 08 §2, §4).
//
// It says who it is and what its node has (the hello, written by its caller), then
// runs each job the run sends it for its node exactly as a run runs one on its own
// node — run_job: bound, wired up, supervised, every rank's group killed at the end —
// and sends back the job's output as it comes and its outcome when it ends. A beat
// every second tells the run it is alive while nothing else is said.
//
// It ends when the run does: its stdin ending (the run exited, however it died — the
// launcher forwards the end of its stdin), an "end" request, or a write to the run
// failing. Every running job is then cancelled (SIGTERM, SIGKILL after the job's
// grace) and waited for before the agent exits, so nothing it started outlives it.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "launch/spawn.h"
#include "util/env.h"

namespace berth::launch::agent {

struct ServerOptions {
  std::string node;       // this agent's node, as the run names it: requests "to" it are its own
  nlohmann::json hello;   // what it says first: {"t": "hello", ...} less the node
  int in_fd = 0;          // the run's requests
  int out_fd = 1;         // its messages to the run (agent_wire.h framing)
  int stop_fd = -1;       // readable: end as at the run's end (the agent's own SIGTERM)
  std::chrono::milliseconds beat{1000};
  // Its own environment: the jobs' until the run sends its own (then the run's, but for
  // the variables that name the node: HOSTNAME, SLURMD_NODENAME stay this node's).
  Env env;
  Spawner* spawner = nullptr;  // null: the real one
};

// Serves until the run ends (above). 0 when the run ended it; 1 when its stdin or
// stdout broke in a way other than ending (said in the returned problem).
struct Served {
  int code = 0;
  std::string problem;
  int jobs = 0;  // jobs run
};
Served serve(ServerOptions o);

}  // namespace berth::launch::agent
