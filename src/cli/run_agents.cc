// The agents of one berth run (run_agents.h).
#include "cli/run_agents.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>

#include "place/agent_launch.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

// berth itself, as the agents run it: the same file, which every node of an
// allocation sees at the same path (a shared installation).
std::string self_path() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "berth";
}

// The nodes that get an agent: every up node but this one (all: this one too).
std::vector<std::string> agent_nodes(const Context& ctx, place::AgentsMode mode) {
  std::vector<std::string> nodes;
  const std::string here = ctx.here();
  for (const alloc::Node* n : ctx.allocation.up_nodes()) {
    if (mode == place::AgentsMode::kAll || n->name != here) nodes.push_back(n->name);
  }
  return nodes;
}

}  // namespace

Result<RunAgents> start_run_agents(const Context& ctx, std::string_view mode_text, bool worker,
                                   bool dry_run, const MachineFlags& machine,
                                   const std::function<void(std::string_view)>& say) {
  BERTH_TRY(place::AgentsMode mode, place::parse_agents_mode(mode_text));
  RunAgents out;
  if (mode == place::AgentsMode::kOff || worker || dry_run) return out;
  std::vector<std::string> nodes = agent_nodes(ctx, mode);
  if (nodes.empty()) return out;
  std::vector<std::string> agent = {self_path(), "agent"};
  if (!machine.machine.empty()) agent.insert(agent.end(), {"--machine", machine.machine});
  auto launches = place::agent_launches(ctx.allocation.owner, ctx.launcher, nodes, agent);
  if (!launches.ok()) {
    if (mode == place::AgentsMode::kAll) return launches.error().with_context("--agents all");
    say(launches.error().message() + ": steps on other nodes go through the launcher, one call each");
    return out;
  }
  launch::AgentsOptions o;
  for (auto& l : *launches) {
    o.channels.push_back({std::move(l.argv), std::move(l.nodes), std::move(l.ended)});
  }
  o.env = process_env();
  o.say = say;
  out.agents = launch::Agents::start(std::move(o));
  out.agents->wait_started();
  for (const auto& [node, said] : out.agents->ready()) {
    const nlohmann::json& hello = said;
    auto text = [&hello](const char* key) {
      auto f = hello.find(key);
      return f != hello.end() && f->is_string() ? f->get<std::string>() : std::string();
    };
    std::string problem = text("problem");
    auto offer = hello.contains("offer")
                     ? place::offer_from_json(hello["offer"])
                     : Result<place::NodeOffer>(Error(
                           Errc::kInvalidInput, problem.empty() ? "its hello has no offer" : problem));
    if (std::string ro = text("read_only_problem"); !ro.empty()) {
      say(fmt::format("on '{}': {}; steps' inputs there are not protected from writes, and a "
                      "step that writes to one changes the original", node, ro));
    }
    if (offer.ok()) {
      out.offers[node] = std::move(*offer);
    } else {
      say(fmt::format("the agent on '{}' could not describe its node: {}; the node is left out",
                      node, offer.error().message()));
      out.left_out.push_back(node);
    }
  }
  auto lost = out.agents->lost();
  for (const auto& [node, why] : lost) {
    say(fmt::format("the agent on '{}' did not start: {}; the node is left out", node, why));
    out.left_out.push_back(node);
  }
  if (out.offers.empty()) {
    say("no agent started: steps on other nodes go through the launcher, one call each");
    out.agents.reset();
    out.left_out.clear();
  }
  return out;
}

}  // namespace berth::cli
