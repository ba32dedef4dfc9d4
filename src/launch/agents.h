// Agents: the run's side of its berth agents — started once through the allocation's
// own launcher, asked to run jobs on their nodes, and ended with the run (spec 08).
//
// Each channel is one launcher process (one srun step for every node; one qrsh -inherit,
// blaunch, pbs_tmrsh or ssh per node), started by the one spawner with its stdin a
// socket berth writes requests to and its stdout and stderr pipes berth reads; one
// thread per channel reads them (agent_wire.h) and keeps each node's state:
//   - starting: until its hello, or `hello_within` passes (then lost: "did not start");
//   - ready: its hello says what the node has; a job may be sent to it;
//   - lost: its launcher ended, it sent nothing for `silence`, or its wire broke. Every
//     job it was running fails with Errc::kUnavailable, naming the node and why: the
//     one error that means "run it somewhere else", never the job's own failure.
// Nothing waits for ever: every wait is on a deadline or on the launcher's end.
//
// Ending (the destructor): every launcher's stdin is closed, which every agent sees as
// the run's end (it ends its jobs and exits); a launcher still there after a few
// seconds gets SIGTERM, then SIGKILL. A run that dies without ending them closes the
// same stdin by dying, so its agents end the same way.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "launch/job.h"
#include "launch/spawn.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::launch {

// One launcher process and the nodes whose agents it starts.
struct AgentChannel {
  std::vector<std::string> argv;
  std::vector<std::string> nodes;
  // The node a line of the launcher's stderr says has lost its agent, or "" (null:
  // none does); that node is lost at once.
  std::function<std::string(std::string_view)> ended;
};

struct AgentsOptions {
  std::vector<AgentChannel> channels;
  Env env;  // the launchers' environment; also sent to every agent as its jobs' own
  std::chrono::milliseconds hello_within{60000};
  std::chrono::milliseconds silence{15000};
  Spawner* spawner = nullptr;  // null: the real one
  // What the run should hear (an agent lost), one line, without "berth: ".
  std::function<void(std::string_view)> say;
};

class Agents {
 public:
  // Starts every channel's launcher. Never fails as a whole: a launcher that cannot
  // start loses its nodes, with the reason.
  static std::unique_ptr<Agents> start(AgentsOptions o);
  ~Agents();
  Agents(const Agents&) = delete;
  Agents& operator=(const Agents&) = delete;

  // Waits until every node is ready or lost (each has its deadline).
  void wait_started();
  // The hello of every node ready now, by node.
  std::map<std::string, nlohmann::json> ready() const;
  // Why each node that is lost was lost, by node.
  std::map<std::string, std::string> lost() const;
  // Whether a job may be sent to `node` now.
  bool serves(std::string_view node) const;
  // Whether `node` was given an agent (serving now or lost): a step placed there never
  // goes any other way.
  bool knows(std::string_view node) const;

  // Runs `job` on `node`'s agent and waits for its end, its output to `sinks` as it
  // comes (from the channel's thread). job.cancel_fd readable cancels it there. Fails
  // with kUnavailable when the node's agent is, or becomes, lost; with kIo when the
  // agent could not run the job (its message).
  Result<JobOutcome> run(const std::string& node, const JobSpec& job, const OutputSinks& sinks);

  struct State;

 private:
  explicit Agents(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace berth::launch
