// berth place: render a launch confined to a placement, or run it (spec 02).
//
// The placement comes from the flags (--nodes, --cores, --gpus, --gpu-ids) or, with
// --auto, from the pool over the whole allocation. With --count K, K such launches
// are drawn from one pool: with --run they run at once as far as they fit, and the
// rest wait for a release — never two on one core.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "launch/capture.h"
#include "launch/process_set.h"
#include "launch/spawn.h"
#include "place/context.h"
#include "place/pool.h"
#include "place/render.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

struct Flags {
  AllocFlags alloc;
  MachineFlags machine;
  int tasks = 1;
  int cpus_per_task = 1;
  std::string nodes;
  std::string cores;
  std::string gpus = "none";
  std::string gpu_ids;
  int64_t memory_cap = 0;
  std::string format = "shell";
  bool run = false;
  bool automatic = false;
  int count = 1;
  std::vector<std::string> command;
};

// The nodes --nodes names, as written (trimmed).
std::vector<std::string> named_nodes(const std::string& nodes) {
  std::vector<std::string> out;
  for (auto n : str::split(nodes, ',')) out.emplace_back(str::trim(n));
  return out;
}

// The placement the flags describe, or nullopt when they describe none. The flags are
// read here; the placement is checked against the allocation by the library
// (Context::named_placement), as the Python module's are.
Result<std::optional<place::Placement>> explicit_placement(const Flags& f, const Context& c) {
  if (f.nodes.empty() && f.cores.empty()) return std::optional<place::Placement>();
  std::vector<std::pair<std::string, std::string>> per_node;  // --cores 'a:SET;b:SET'
  if (f.cores.find(':') != std::string::npos) {
    for (auto item : str::split(f.cores, ';')) {
      size_t colon = item.find(':');
      if (colon == std::string_view::npos) {
        return fail(Errc::kInvalidInput,
                    fmt::format("--cores: '{}' is not NODE:SET (in 'a:SET;b:SET')",
                                str::printable(item)));
      }
      per_node.emplace_back(std::string(str::trim(item.substr(0, colon))),
                            std::string(item.substr(colon + 1)));
    }
  }
  // The nodes: --nodes, else those --cores names per node, else (--cores alone) this
  // node — the library's reading of no nodes.
  std::vector<std::string> nodes;
  if (!f.nodes.empty()) {
    nodes = named_nodes(f.nodes);
  } else {
    for (const auto& [n, set] : per_node) nodes.push_back(n);
  }
  if (auto known = c.check_nodes(nodes); !known.ok()) return known.error().with_context("--nodes");
  if (!per_node.empty() && per_node.size() != nodes.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("--cores names {} node(s) but --nodes names {}", per_node.size(),
                            nodes.size()));
  }
  std::vector<std::vector<int>> cores;
  for (size_t i = 0; i < per_node.size(); ++i) {
    if (per_node[i].first != nodes[i]) {
      return fail(Errc::kInvalidInput,
                  fmt::format("--cores: entry {} is for '{}' but node {} is '{}'", i + 1,
                              per_node[i].first, i + 1, nodes[i]));
    }
    BERTH_TRY(std::vector<int> set, place::parse_ids(per_node[i].second, "--cores"));
    cores.push_back(std::move(set));
  }
  if (per_node.empty() && !f.cores.empty()) {
    BERTH_TRY(std::vector<int> set, place::parse_ids(f.cores, "--cores"));
    cores.push_back(std::move(set));
  }
  auto named = c.named_placement(std::move(nodes), std::move(cores));
  if (!named.ok()) return named.error().with_context("--cores");
  place::Placement p = std::move(*named);
  if (f.gpus != "none") {
    auto n = str::parse_uint(f.gpus, 4096);
    if (!n.ok()) return n.error().with_context("--gpus (a number or none)");
    p.gpus = static_cast<int>(*n);
  }
  if (!f.gpu_ids.empty()) {
    for (auto id : str::split(f.gpu_ids, ',')) p.gpu_ids.emplace_back(str::trim(id));
    if (f.gpus == "none") p.gpus = static_cast<int>(p.gpu_ids.size());
  }
  return std::optional<place::Placement>(std::move(p));
}

place::LaunchSpec launch_spec(const Flags& f, const Context& c) {
  return c.launch_spec(f.tasks, f.cpus_per_task,
                       f.memory_cap > 0 ? place::MemoryCap(f.memory_cap) : std::nullopt,
                       f.command);
}

nlohmann::ordered_json to_json(const place::Rendered& r, const std::optional<place::Placement>& p,
                               const place::LaunchSpec& s, const Context& c) {
  return place::rendering_json(r, p, s, c.launcher);
}

// The request that runs a rendered launch: the rendered variables over berth's own
// environment, berth's stdout and stderr, and for the local launcher the CPU binding
// (which the launch's whole tree inherits). Its stdin is berth's, but /dev/null when
// that is a terminal: a process group not in the terminal's foreground that reads it
// is stopped (SIGTTIN), and berth would wait for it for ever. launch::ProcessSet
// starts it, reaps it and ends it with berth's signals.
launch::SpawnRequest spawn_request(const place::Rendered& r, const Env& env) {
  Env launch_env = env;
  for (const auto& [k, v] : r.env) launch_env.set(k, v);
  launch::SpawnRequest req;
  req.argv = r.argv;
  req.envp = launch::envp_of(launch_env);
  req.cpus = r.bind_cpus;
  // A descriptor berth has open is passed on; a closed one becomes /dev/null.
  auto inherited = [](int fd) { return ::fcntl(fd, F_GETFD) >= 0 ? fd : -1; };
  req.stdin_fd = ::isatty(STDIN_FILENO) ? -1 : inherited(STDIN_FILENO);
  req.stdout_fd = inherited(STDOUT_FILENO);
  req.stderr_fd = inherited(STDERR_FILENO);
  return req;
}

int print(const std::vector<nlohmann::ordered_json>& launches, const std::vector<std::string>& lines,
          size_t waiting, const Flags& f) {
  std::string out;
  if (f.format == "json") {
    nlohmann::ordered_json j;
    if (f.count == 1 && !launches.empty()) {
      j = launches[0];
    } else {
      j = nlohmann::ordered_json::array();
      for (const auto& l : launches) j.push_back(l);
      for (size_t i = 0; i < waiting; ++i) j.push_back({{"waits", true}});
    }
    out = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else {
    for (const auto& l : lines) out += l + "\n";
    if (waiting) out += fmt::format("# {} more launch(es) wait for a release\n", waiting);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

// What a rendered launch does not do (an unenforced cap, a dropped binding option), on
// stderr: the JSON carries it, and shell output must not lose it.
void say_notes(const place::Rendered& r, const Flags& f) {
  if (f.format == "json" && !f.run) return;
  for (const auto& n : r.notes) std::fprintf(stderr, "berth: note: %s\n", n.c_str());
}

int run_place(Flags f) {
  if (f.command.empty()) return report(Error(Errc::kInvalidInput, "no command given after --"));
  // GPUs asked for with no nodes or cores named are granted from the pool, as --auto
  // grants them: a placement of no devices would drop the request.
  const bool gpus_asked = f.gpus != "none" && f.gpus != "0";
  if (!f.automatic && f.nodes.empty() && f.cores.empty()) {
    if (!f.gpu_ids.empty()) {
      return report(Error(Errc::kInvalidInput,
                          "--gpu-ids names the devices of a placement: give --nodes or --cores "
                          "with it, or --gpus N for the pool to choose"));
    }
    if (gpus_asked) f.automatic = true;
  }
  if (f.count < 1) return report(Error(Errc::kInvalidInput, "--count must be at least 1"));
  if (f.count > 1 && !f.automatic) {
    return report(Error(Errc::kInvalidInput, "--count needs --auto: launches share one pool"));
  }
  if (f.automatic && (!f.nodes.empty() || !f.cores.empty())) {
    return report(Error(Errc::kInvalidInput, "--auto chooses the placement; drop --nodes/--cores"));
  }

  // 1. What berth was given, and what runs it.
  auto ctx = build_context(f.alloc, f.machine);
  if (!ctx.ok()) return report(ctx.error());
  const Context& c = *ctx;
  place::LaunchSpec spec = launch_spec(f, c);

  // 2. Without --auto: one launch, placed by the flags or not at all.
  if (!f.automatic) {
    auto p = explicit_placement(f, c);
    if (!p.ok()) return report(p.error());
    auto r = place::render(*c.machine, c.launcher, *p, spec);
    if (!r.ok()) return report(r.error());
    say_notes(*r, f);
    if (*p) {
      if (auto reach = c.check_reachable((*p)->nodes); !reach.ok()) return report(reach.error());
    }
    if (!f.run) return print({to_json(*r, *p, spec, c)}, {place::shell_line(*r)}, 0, f);
    launch::ProcessSet launches;
    if (auto started = launches.start(spawn_request(*r, process_env()), 0); !started.ok()) {
      return report(started.error());
    }
    auto ended = launches.wait_one();
    return ended ? ended->status.exit_code() : 128 + launches.signalled();
  }

  // 3. --auto: every launch is granted a placement by one pool over the allocation,
  // every node of which the launcher must reach.
  std::vector<place::PoolNode> pool_nodes = c.pool_nodes();
  {
    std::vector<std::string> names;
    for (const auto& n : pool_nodes) names.push_back(n.name);
    if (auto reach = c.check_reachable(names); !reach.ok()) return report(reach.error());
  }
  place::Pool pool(pool_nodes);
  place::Request req;
  req.tasks = f.tasks;
  req.cpus_per_task = f.cpus_per_task;
  if (f.gpus != "none") {
    auto n = str::parse_uint(f.gpus, 4096);
    if (!n.ok()) return report(n.error().with_context("--gpus (a number or none)"));
    req.gpus = static_cast<int>(*n);
  }
  if (!f.nodes.empty()) req.nodes = static_cast<int>(str::split(f.nodes, ',').size());
  if (f.memory_cap > 0) req.memory_mb = f.memory_cap;

  std::vector<nlohmann::ordered_json> launches;
  std::vector<std::string> lines;
  std::optional<launch::ProcessSet> running;  // only with --run: it takes berth's signals
  if (f.run) running.emplace();
  int pending = f.count;
  int first_failure = 0;
  for (;;) {
    // Grant and start as many as fit now; a launch that can never fit is refused
    // before anything starts (the first grant tells).
    while (pending > 0) {
      auto g = pool.grant(req);
      if (!g.ok()) return report(g.error());
      if (!g->has_value()) break;
      place::Grant grant = std::move(**g);
      auto r = place::render(*c.machine, c.launcher, grant.placement, spec);
      if (!r.ok()) return report(r.error());
      // What the grant could not do as it should (cores away from its GPUs) goes with it.
      r->notes.insert(r->notes.end(), grant.placement.notes.begin(), grant.placement.notes.end());
      say_notes(*r, f);
      --pending;
      if (!f.run) {
        launches.push_back(to_json(*r, grant.placement, spec, c));
        lines.push_back(place::shell_line(*r));
        continue;
      }
      if (auto started = running->start(spawn_request(*r, process_env()), grant.id); !started.ok()) {
        pool.release(grant.id);
        return report(started.error());
      }
    }
    if (!f.run) return print(launches, lines, static_cast<size_t>(pending), f);
    if (running->empty()) break;
    // Wait for a launch to end, give its resources back, and start what now fits. A
    // signal to berth has ended them all: the launches still waiting never start.
    auto ended = running->wait_one();
    if (!ended) return 128 + running->signalled();
    pool.release(ended->tag);
    int code = ended->status.exit_code();
    if (code != 0 && first_failure == 0) first_failure = code;
  }
  return first_failure;
}

}  // namespace

std::function<int()> setup_place(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  app.add_option("-n,--ntasks", f->tasks, "Tasks in the launch")->required();
  app.add_option("-c,--cpus-per-task", f->cpus_per_task, "Cores per task")->capture_default_str();
  app.add_option("--nodes", f->nodes, "Nodes the launch may use: a,b");
  app.add_option("--cores", f->cores, "Core ids on every node (0-3,8), or per node 'a:SET;b:SET'");
  app.add_option("--gpus", f->gpus, "GPU total for the launch, or none")->capture_default_str();
  app.add_option("--gpu-ids", f->gpu_ids,
                 "Device ids where nothing assigns GPUs (PALS, mpirun, hydra, local)");
  app.add_option("--memory-cap", f->memory_cap, "Memory cap in MB per node (absent unless given)");
  app.add_option("--format", f->format, "Output: the shell command, or JSON")
      ->check(CLI::IsMember({"shell", "json"}))
      ->capture_default_str();
  app.add_flag("--run", f->run, "Run the launch instead of printing it");
  app.add_flag("--auto", f->automatic, "Ask the pool over the allocation for the placement");
  app.add_option("--count", f->count, "With --auto: this many launches from one pool")
      ->capture_default_str();
  add_machine_flags(app, f->machine);
  add_alloc_flags(app, f->alloc);
  app.add_option("command", f->command, "The command to launch (after --)");
  app.positionals_at_end();
  return [f] { return run_place(*f); };
}

}  // namespace berth::cli
