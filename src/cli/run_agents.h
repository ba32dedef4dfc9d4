// The agents of one `berth run` (spec 08 §2): which nodes get one, started through the
// allocation's own launcher, and what each said of its node — the pool's view of it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"
#include "launch/agents.h"
#include "place/node_offer.h"
#include "util/result.h"

namespace berth::cli {

struct RunAgents {
  std::unique_ptr<launch::Agents> agents;  // null: none
  std::map<std::string, place::NodeOffer> offers;  // by node: what its agent read there
  std::vector<std::string> left_out;  // nodes whose agent did not start: not used
};

// Starts the agents `mode` (--agents) asks for: none for a worker (its node is its
// own), a dry run, or an allocation of this node alone. Waits until each has said
// hello or failed; a node whose agent failed is left out with the reason said, and
// when every one failed the run goes on without agents (each step elsewhere through
// the launcher), saying so. Fails on a bad mode, and under --agents all where berth
// cannot start agents.
Result<RunAgents> start_run_agents(const Context& ctx, std::string_view mode, bool worker,
                                   bool dry_run, const MachineFlags& machine,
                                   const std::function<void(std::string_view)>& say);

}  // namespace berth::cli
