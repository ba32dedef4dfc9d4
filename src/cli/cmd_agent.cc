// berth agent: a run's agent on one node (spec 08). A run starts one on each node it
// uses, once, through the allocation's own launcher; it is not for people to start.
// It describes its node, then serves the run's requests on stdin and answers on
// stdout (launch/agent_server.h) until the run ends.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "cli/version.h"
#include "launch/agent_server.h"
#include "launch/read_only.h"
#include "place/node_offer.h"

namespace berth::cli {
namespace {

struct AgentFlags {
  std::string node;
  std::string node_from;
  MachineFlags machine;
};

int run_agent(const AgentFlags& f) {
  const Env& env = process_env();
  std::string node = f.node;
  if (node.empty() && !f.node_from.empty()) node = env.get(f.node_from).value_or("");
  if (node.empty()) {
    return report(Error(Errc::kInvalidInput,
                        f.node_from.empty()
                            ? "berth agent: give --node NAME (its node, as the run names it)"
                            : "berth agent: --node-from " + f.node_from + ": not set here"));
  }
  // Its node, as it reads it here: what the run's pool will place on (spec 08 §4).
  nlohmann::json hello = {{"pid", ::getpid()},
                          {"host", place::local_host().hostname},
                          {"version", std::string(BERTH_VERSION) + " (" + BERTH_GIT_COMMIT + ")"}};
  if (auto offer = place::node_offer_here(env, f.machine); offer.ok()) {
    hello["offer"] = place::offer_to_json(*offer);
  } else {
    hello["problem"] = offer.error().message();
  }
  // Whether its steps' inputs can be made read-only here (spec 04 §7): said once, by the run.
  if (const auto& ro = launch::read_only_support(); !ro.ok()) {
    hello["read_only_problem"] = ro.error().message();
  }
  // Its own SIGINT, SIGTERM or SIGHUP (a launcher ending its step) ends it as the run's
  // end does: its jobs are ended first. Children are seen through pidfds, as in a run;
  // a run gone while the agent writes is a failed write, not SIGPIPE.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  sigdelset(&mask, SIGCHLD);
  int stop = signalfd(-1, &mask, SFD_CLOEXEC);
  ::signal(SIGPIPE, SIG_IGN);
  launch::agent::ServerOptions o;
  o.node = node;
  o.hello = std::move(hello);
  o.env = env;
  o.stop_fd = stop;
  auto served = launch::agent::serve(std::move(o));
  if (!served.problem.empty()) std::fprintf(stderr, "berth agent on %s: %s\n", node.c_str(), served.problem.c_str());
  return served.code;
}

}  // namespace

std::function<int()> setup_agent(CLI::App& app) {
  auto f = std::make_shared<AgentFlags>();
  app.add_option("--node", f->node, "This node's name, as the run names it");
  app.add_option("--node-from", f->node_from,
                 "Take this node's name from the environment variable VARIABLE (SLURMD_NODENAME)");
  app.add_option("--machine", f->machine.machine,
                 "Machine description to use (default: detect), as the run was given");
  return [f] { return run_agent(*f); };
}

}  // namespace berth::cli
