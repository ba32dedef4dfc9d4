// berth: runs many pieces of work inside an HPC allocation.
//
// main reads like a table of contents: one table of subcommands, parse, run the
// chosen one. Each subcommand lives in its own cmd_<name>.cc.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "cli/flag_hint.h"
#include "cli/version.h"
#include "topo/cpu_reader.h"
#include "util/say.h"
#include "wireup/pmix_server.h"

namespace {

const berth::cli::Command kCommands[] = {
    {"alloc", "Discover the allocation: which nodes, how many slots, who owns it",
     berth::cli::setup_alloc},
    {"machine", "Describe this machine and node: cores, GPUs, memory, launcher, support",
     berth::cli::setup_machine},
    {"place", "Render (or run) a launch confined to a placement", berth::cli::setup_place},
    {"run", "Run a pipeline: every result in the store, reruns only what changed",
     berth::cli::setup_run},
    {"report", "A run's report, the last by default (--html: with a timeline)",
     berth::cli::setup_report},
    {"runs", "A pipeline's earlier runs, as its store keeps them", berth::cli::setup_runs},
    {"log", "A step's output, kept by the run that ran it (-f: as it runs)",
     berth::cli::setup_log},
    {"status", "What a pipeline's run is doing now: running steps, where, what waits",
     berth::cli::setup_status},
    {"methods", "A methods paragraph for what computed the pipeline's outputs",
     berth::cli::setup_methods},
    {"store", "Inspect the store: put, get, verify, cat; collect it: gc", berth::cli::setup_store},
    {"launch", "Run ranks of one or more apps on this node: bound, supervised, forwarded",
     berth::cli::setup_launch, /*takes_command=*/true},
    {"agent", "Serve a run on this node (berth run starts it through the launcher)",
     berth::cli::setup_agent},
};

// The command line without the words from the first `--` on, when the subcommand
// takes a command (see Command::takes_command); those words go to command_tail().
std::vector<std::string> split_command_tail(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return args;
  for (const auto& c : kCommands) {
    if (!c.takes_command || args[0] != c.name) continue;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] != "--") continue;
      berth::cli::command_tail() =
          std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      args.resize(i);
      break;
    }
  }
  return args;
}

}  // namespace

std::optional<std::vector<std::string>>& berth::cli::command_tail() {
  static std::optional<std::vector<std::string>> tail;
  return tail;
}

int main(int argc, char** argv) {
  // Before any thread: what berth's own libraries read only from the process
  // environment, set there for berth alone (and handed on to nothing it starts) —
  // hwloc's unused plugins left out, libpmix's hash datastore chosen. (process_env()
  // is taken here, before them, once for the whole command.)
  const berth::Env& env = berth::cli::process_env();
  for (const auto& v : {berth::topo::HwlocCpuReader::unused_plugins(env),
                        berth::wireup::PmixServer::datastore_choice(env)}) {
    if (v) berth::Env::set_for_berth_only(v->first, v->second);
  }
  // What the floors below cannot hand up as a value (util/say.h) is said here.
  berth::set_say([](berth::SayLevel level, const char* text) {
    std::fprintf(stderr, "berth: %s%s\n", level == berth::SayLevel::kWarning ? "warning: " : "",
                 text);
  });
  CLI::App app{"berth: run many pieces of work inside an HPC allocation", "berth"};
  app.set_version_flag("--version", std::string("berth ") + BERTH_VERSION + " (commit " +
                                        BERTH_GIT_COMMIT + ")");
  app.require_subcommand(1);
  app.fallthrough(false);

  // 1. Declare every subcommand and its flags.
  std::function<int()> chosen;
  for (const auto& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    auto run = c.setup(*sub);
    sub->callback([&chosen, run] { chosen = run; });
  }

  // 2. Parse. Help and version exit 0; a malformed command line exits 2 (bad input).
  std::vector<std::string> args = split_command_tail(argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 takes its words back to front
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // A word close to a subcommand or flag that exists is said with it, on one line.
    if (std::string hint = berth::cli::flag_hint(app, e); !hint.empty()) {
      std::fprintf(stderr, "%s\n", hint.c_str());
      return berth::cli::kExitBadInput;
    }
    int rc = app.exit(e);
    return rc == 0 ? berth::cli::kExitOk : berth::cli::kExitBadInput;
  }

  // 3. Run the chosen subcommand.
  return chosen ? chosen() : berth::cli::kExitBadInput;
}
