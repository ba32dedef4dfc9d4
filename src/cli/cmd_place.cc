// berth place: render a launch confined to a placement, or run it (spec 02).
//
// The placement comes from the flags (--nodes, --cores, --gpus, --gpu-ids) or, with
// --auto, from the pool over the whole allocation. With --count K, K such launches
// are drawn from one pool: with --run they run at once as far as they fit, and the
// rest wait for a release — never two on one core.
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "alloc/hostlist.h"
#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "place/pool.h"
#include "place/render.h"
#include "topo/gpus.h"
#include "util/strings.h"

extern char** environ;  // NOLINT: launches inherit berth's environment plus the rendered one

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

// The nodes named by --nodes, checked against the allocation.
Result<std::vector<std::string>> named_nodes(const Flags& f, const Context& c) {
  std::vector<std::string> out;
  for (auto n : str::split(f.nodes, ',')) {
    std::string name(str::trim(n));
    bool found = false;
    for (const auto* node : c.allocation.up_nodes()) {
      found |= node->name == name || node->rawname == name;
    }
    if (!found) {
      std::vector<std::string> names;
      for (const auto* node : c.allocation.up_nodes()) names.push_back(node->name);
      return fail(Errc::kRefused,
                  fmt::format("--nodes: node '{}' is not in the {} allocation ({})",
                              str::printable(name), c.allocation.owner,
                              alloc::hostlist::compress(names)));
    }
    out.push_back(name);
  }
  return out;
}

// The placement the flags describe, or nullopt when they describe none.
Result<std::optional<place::Placement>> explicit_placement(const Flags& f, const Context& c) {
  if (f.nodes.empty() && f.cores.empty()) return std::optional<place::Placement>();
  place::Placement p;
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
  if (!f.nodes.empty()) {
    BERTH_TRY(p.nodes, named_nodes(f, c));
  } else if (!per_node.empty()) {
    Flags g = f;
    std::vector<std::string> names;
    for (const auto& [n, s] : per_node) names.push_back(n);
    g.nodes = str::join(names, ",");
    BERTH_TRY(p.nodes, named_nodes(g, c));
  } else {
    // --cores alone: this node.
    const alloc::Node* local = nullptr;
    for (const auto* n : c.allocation.up_nodes()) {
      if (n->local) local = n;
    }
    if (!local) {
      return fail(Errc::kInvalidInput,
                  "--cores without --nodes means this node, which is not in the allocation; "
                  "name the nodes with --nodes");
    }
    p.nodes = {local->name};
  }
  if (!per_node.empty() && per_node.size() != p.nodes.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("--cores names {} node(s) but --nodes names {}", per_node.size(),
                            p.nodes.size()));
  }
  std::vector<place::PoolNode> usable = c.pool_nodes();
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    std::vector<int> usable_here;
    for (const auto& u : usable) {
      if (u.name == p.nodes[i]) usable_here = u.cores;
    }
    std::vector<int> set;
    if (!per_node.empty()) {
      if (per_node[i].first != p.nodes[i]) {
        return fail(Errc::kInvalidInput,
                    fmt::format("--cores: entry {} is for '{}' but node {} is '{}'", i + 1,
                                per_node[i].first, i + 1, p.nodes[i]));
      }
      BERTH_TRY(set, place::parse_ids(per_node[i].second, "--cores"));
    } else if (!f.cores.empty()) {
      BERTH_TRY(set, place::parse_ids(f.cores, "--cores"));
    } else {
      set = usable_here;
    }
    for (int id : set) {
      if (std::find(usable_here.begin(), usable_here.end(), id) == usable_here.end()) {
        return fail(Errc::kRefused,
                    fmt::format("--cores: core {} is not usable on node '{}' (usable: {})", id,
                                p.nodes[i], place::format_ids(usable_here)));
      }
    }
    p.cores.push_back(std::move(set));
  }
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
  place::LaunchSpec s;
  s.tasks = f.tasks;
  s.cpus_per_task = f.cpus_per_task;
  if (f.memory_cap > 0) s.memory_cap = f.memory_cap;
  s.command = f.command;
  s.local_gpu_variable = topo::gpu_visibility_variable(c.node.gpus.vendor);
  return s;
}

nlohmann::ordered_json to_json(const place::Rendered& r, const std::optional<place::Placement>& p,
                               const place::LaunchSpec& s, const Context& c) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["version"] = 1;
  j["argv"] = r.argv;
  ordered_json env = ordered_json::object();
  for (const auto& [k, v] : r.env) env[k] = v;
  j["env"] = env;
  j["mechanism"] = place::mechanism_name(r.mechanism);
  j["memory_cap"] = place::cap_state_name(r.memory_cap);
  j["memory_cap_mb"] = s.memory_cap ? ordered_json(*s.memory_cap) : ordered_json(nullptr);
  if (p) {
    ordered_json pj;
    pj["nodes"] = p->nodes;
    std::vector<std::string> cores;
    for (const auto& set : p->cores) cores.push_back(place::format_ids(set));
    pj["cores"] = cores;
    pj["gpus"] = p->gpus;
    pj["gpu_ids"] = p->gpu_ids;
    j["placement"] = pj;
  } else {
    j["placement"] = nullptr;
  }
  j["bind_cpus"] = r.bind_cpus.empty() ? ordered_json(nullptr)
                                       : ordered_json(place::format_ids(r.bind_cpus));
  j["tasks"] = s.tasks;
  j["cpus_per_task"] = s.cpus_per_task;
  j["launcher"] = {{"kind", topo::launcher_kind_name(c.launcher.kind)},
                   {"version_text", c.launcher.version_text}};
  j["notes"] = r.notes;
  return j;
}

// Starts a rendered launch: the rendered variables over berth's environment, and for
// the local launcher the CPU binding, which the child and its whole tree inherit.
// The binding is applied to berth's own thread around the spawn and restored after:
// posix_spawn has no affinity attribute, and this command spawns from one thread.
Result<pid_t> start(const place::Rendered& r) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : r.env) env[k] = v;
  std::vector<std::string> flat;
  for (const auto& [k, v] : env) flat.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : flat) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = r.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  cpu_set_t saved;
  bool bound = !r.bind_cpus.empty();
  if (bound) {
    cpu_set_t want;
    CPU_ZERO(&want);
    for (int cpu : r.bind_cpus) CPU_SET(cpu, &want);
    if (sched_getaffinity(0, sizeof saved, &saved) != 0 ||
        sched_setaffinity(0, sizeof want, &want) != 0) {
      return fail(Errc::kRefused, fmt::format("binding to cores {} refused: {}",
                                              place::format_ids(r.bind_cpus),
                                              std::strerror(errno)));
    }
  }
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (bound) sched_setaffinity(0, sizeof saved, &saved);
  if (rc != 0) {
    return fail(rc == ENOENT ? Errc::kNotFound : Errc::kIo,
                fmt::format("cannot start '{}': {}", str::printable(r.argv[0]),
                            std::strerror(rc)));
  }
  return pid;
}

// The exit status a launch's wait status stands for: its code, or 128 + signal.
int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
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

int run_place(const Flags& f) {
  if (f.command.empty()) return report(Error(Errc::kInvalidInput, "no command given after --"));
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
    if (*p) {
      if (auto reach = c.check_reachable((*p)->nodes); !reach.ok()) return report(reach.error());
    }
    if (!f.run) return print({to_json(*r, *p, spec, c)}, {place::shell_line(*r)}, 0, f);
    auto pid = start(*r);
    if (!pid.ok()) return report(pid.error());
    int status = 0;
    while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
    return exit_code(status);
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
  std::map<pid_t, uint64_t> running;  // pid -> grant
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
      --pending;
      if (!f.run) {
        launches.push_back(to_json(*r, grant.placement, spec, c));
        lines.push_back(place::shell_line(*r));
        continue;
      }
      auto pid = start(*r);
      if (!pid.ok()) {
        pool.release(grant.id);
        return report(pid.error());
      }
      running[*pid] = grant.id;
    }
    if (!f.run) return print(launches, lines, static_cast<size_t>(pending), f);
    if (running.empty()) break;
    // Wait for any launch to end, give its resources back, and start what now fits.
    int status = 0;
    pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(done);
    if (it == running.end()) continue;
    pool.release(it->second);
    running.erase(it);
    int code = exit_code(status);
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
  app.add_option("--gpu-ids", f->gpu_ids, "Device ids where nothing assigns GPUs (PALS, local)");
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
