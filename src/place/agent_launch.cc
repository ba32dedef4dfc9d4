// How a run starts its berth agents (agent_launch.h).
#include "place/agent_launch.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace berth::place {
namespace {

std::vector<std::string> with_node(std::vector<std::string> agent, const std::string& node) {
  agent.push_back("--node");
  agent.push_back(node);
  return agent;
}

AgentLaunch one_step(const Launcher& l, const std::vector<std::string>& nodes,
                     const std::vector<std::string>& agent) {
  const size_t n = nodes.size();
  AgentLaunch a;
  a.nodes = nodes;
  a.argv = {"srun",
            "--overlap",
            fmt::format("--nodes={}", n),
            fmt::format("--ntasks={}", n),
            "--ntasks-per-node=1",
            "--nodelist=" + str::join(nodes, ","),
            "--mpi=none",
            "--cpu-bind=none",
            "--input=all",
            "--kill-on-bad-exit=0",
            "--job-name=berth-agents"};
  if (l.version && l.version->at_least(22, 5)) a.argv.push_back("--whole");
  if (l.version && l.version->at_least(23, 11)) a.argv.push_back("--external-launcher");
  a.argv.insert(a.argv.end(), agent.begin(), agent.end());
  a.argv.push_back("--node-from");
  a.argv.push_back("SLURMD_NODENAME");
  a.ended = srun_task_ended;
  return a;
}

}  // namespace

std::string srun_task_ended(std::string_view line) {
  constexpr std::string_view kError = "srun: error: ";
  if (!line.starts_with(kError)) return "";
  line.remove_prefix(kError.size());
  size_t colon = line.find(": task ");
  if (colon == std::string_view::npos || colon == 0) return "";
  std::string_view rest = line.substr(colon + 7);
  size_t digits = 0;
  while (digits < rest.size() && str::is_digit(rest[digits])) ++digits;
  if (digits == 0 || rest.substr(digits, 2) != ": ") return "";
  return std::string(line.substr(0, colon));
}

Result<AgentsMode> parse_agents_mode(std::string_view text) {
  if (text == "auto") return AgentsMode::kAuto;
  if (text == "off") return AgentsMode::kOff;
  if (text == "all") return AgentsMode::kAll;
  return fail(Errc::kInvalidInput,
              fmt::format("--agents: '{}' is not auto, off or all", str::printable(text)));
}

Result<std::vector<AgentLaunch>> agent_launches(std::string_view owner, const Launcher& launcher,
                                                const std::vector<std::string>& nodes,
                                                const std::vector<std::string>& agent) {
  std::vector<AgentLaunch> out;
  if (nodes.empty()) return out;
  if (owner == "slurm") {
    out.push_back(one_step(launcher, nodes, agent));
    return out;
  }
  std::vector<std::string> prefix;
  if (owner == "gridengine") prefix = {"qrsh", "-inherit", "-V"};
  else if (owner == "lsf") prefix = {"blaunch"};
  else if (owner == "pbs") prefix = {"pbs_tmrsh"};
  else if (owner == "hosts") prefix = {"ssh", "-T", "-o", "BatchMode=yes"};
  else {
    return fail(Errc::kUnsupported,
                fmt::format("berth starts no agents in a {} allocation", str::printable(owner)));
  }
  for (const std::string& node : nodes) {
    AgentLaunch a;
    a.nodes = {node};
    a.argv = prefix;
    a.argv.push_back(node);
    // ssh hands the words to the user's shell there: each is quoted for it.
    for (const std::string& w : with_node(agent, node)) {
      a.argv.push_back(owner == "hosts" ? str::shell_quote(w) : w);
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace berth::place
