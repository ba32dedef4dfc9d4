// The machine description parser: TOML (toml++, read through util/toml_fields.h)
// into a MachineDescription.
#include "topo/machine.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <functional>

#include "util/env.h"
#include "util/strings.h"
#include "util/toml_fields.h"

namespace berth::topo {
namespace {

// Bounds on what a description may hold; a file past them is not a description.
constexpr size_t kMaxStringBytes = 4096;
constexpr size_t kMaxArrayItems = 1024;
constexpr int64_t kMaxCores = 65536;
constexpr int64_t kMaxTasks = 1 << 20;
constexpr int64_t kMaxGpus = 4096;
constexpr int64_t kMaxMemoryMb = int64_t{1} << 40;

constexpr TomlLimits kLimits{kMaxStringBytes, kMaxArrayItems};

// Reads the keys a figure's table may hold beyond its own (memory's `standing`).
using ExtraKeys = std::function<Result<void>(TomlFields&)>;

// [<k>] value = N | detect = true, provenance = "...".
Result<Figure> read_figure(TomlFields& f, std::string_view k, int64_t lo, int64_t hi,
                           bool may_detect = true, const ExtraKeys& extra = {}) {
  BERTH_TRY(const toml::table* t, f.table(k));
  if (!t) return f.error(k, "missing (every figure needs a value and its provenance)");
  TomlFields g = f.sub(*t, k);
  Figure fig;
  BERTH_TRY(fig.value, g.integer("value", lo, hi));
  BERTH_TRY(auto detect, g.boolean("detect"));
  if (fig.value && detect && *detect) return g.error("detect", "given with a value");
  if (!fig.value && !(detect && *detect)) {
    return g.error("value", may_detect ? "missing (give a value, or detect = true)" : "missing");
  }
  if (!fig.value && !may_detect) return g.error("detect", "this figure cannot be detected");
  BERTH_TRY(fig.provenance, g.required_string("provenance"));
  if (extra) BERTH_CHECK(extra(g));
  BERTH_CHECK(g.finish());
  return fig;
}

Result<Binding> read_binding(TomlFields& f, std::string_view k) {
  Binding b;
  BERTH_TRY(const toml::table* t, f.table(k));
  if (!t) return b;
  TomlFields g = f.sub(*t, k);
  BERTH_TRY(auto cpu, g.string("cpu_bind"));
  BERTH_TRY(auto dist, g.string("distribution"));
  BERTH_TRY(auto gpu, g.string("gpu_bind"));
  BERTH_TRY(auto mem, g.string("mem_bind"));
  b.cpu_bind = cpu.value_or("");
  b.distribution = dist.value_or("");
  b.gpu_bind = gpu.value_or("");
  b.mem_bind = mem.value_or("");
  if (b.empty()) return g.error("cpu_bind", "a binding table with no options");
  BERTH_TRY(b.provenance, g.required_string("provenance"));
  BERTH_CHECK(g.finish());
  return b;
}

Result<std::vector<DetectRule>> read_detect(TomlFields& f) {
  std::vector<DetectRule> rules;
  const toml::node* n = f.node("detect");
  if (!n) return rules;
  const auto* a = n->as_array();
  if (!a || !a->is_array_of_tables()) {
    return f.error("detect", "expected [[detect]] tables");
  }
  if (a->size() > kMaxArrayItems) return f.error("detect", "too many rules");
  for (size_t i = 0; i < a->size(); ++i) {
    TomlFields g = f.sub(*(*a)[i].as_table(), fmt::format("detect[{}]", i + 1));
    DetectRule r;
    BERTH_TRY(auto host, g.string("hostname"));
    r.hostname = host.value_or("");
    BERTH_TRY(const toml::table* env, g.table("env"));
    if (env) {
      TomlFields e = g.sub(*env, "env");
      for (auto&& [k, v] : *env) {
        std::string name(k.str());
        if (!Env::valid_name(name)) return e.error(str::printable(name), "not a variable name");
        BERTH_TRY(auto pattern, e.string(name));
        r.env.emplace_back(name, *pattern);
      }
    }
    BERTH_TRY(auto gpus, g.string("gpus"));
    if (gpus) {
      if (*gpus == "present") {
        r.gpus_present = true;
      } else if (*gpus == "absent") {
        r.gpus_present = false;
      } else {
        return g.error("gpus", fmt::format("'{}' is not present or absent", str::printable(*gpus)));
      }
    }
    // A GPU count alone says nothing about which machine this is.
    if (r.hostname.empty() && r.env.empty()) {
      return g.error("hostname", "a rule needs a hostname or env condition");
    }
    BERTH_CHECK(g.finish());
    rules.push_back(std::move(r));
  }
  return rules;
}

template <typename Enum, size_t N>
Result<Enum> read_enum(TomlFields& f, std::string_view k,
                       const std::pair<std::string_view, Enum> (&names)[N]) {
  BERTH_TRY(std::string s, f.required_string(k));
  std::vector<std::string> options;
  for (const auto& [name, value] : names) {
    if (s == name) return value;
    options.emplace_back(name);
  }
  return f.error(k,
                 fmt::format("'{}' is not one of {}", str::printable(s), str::join(options, ", ")));
}

constexpr std::pair<std::string_view, SchedulerKind> kSchedulers[] = {
    {"none", SchedulerKind::kNone}, {"slurm", SchedulerKind::kSlurm}, {"pbs", SchedulerKind::kPbs}};
constexpr std::pair<std::string_view, LauncherKind> kLaunchers[] = {
    {"local", LauncherKind::kLocal},
    {"srun", LauncherKind::kSrun},
    {"pals-mpiexec", LauncherKind::kPalsMpiexec}};
constexpr std::pair<std::string_view, MemoryStanding> kStandings[] = {
    {"surveyed", MemoryStanding::kSurveyed},
    {"published", MemoryStanding::kPublished},
    {"estimate", MemoryStanding::kEstimate},
    {"detected", MemoryStanding::kDetected}};

std::string stem_of(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".toml") == 0) {
    base.resize(base.size() - 5);
  }
  return base;
}

Result<MachineDescription> read_description(const toml::table& root, const std::string& path) {
  TomlFields f(root, path, kLimits);
  MachineDescription m;
  m.source = path;
  BERTH_TRY(m.name, f.required_string("name"));
  if (m.name != stem_of(path)) {
    return f.error("name", fmt::format("'{}' does not match the file name '{}'",
                                       str::printable(m.name), str::printable(stem_of(path))));
  }
  BERTH_TRY(auto description, f.string("description"));
  m.description = description.value_or("");

  {
    BERTH_TRY(const toml::table* t, f.table("scheduler"));
    if (!t) return f.error("scheduler", "missing");
    TomlFields g = f.sub(*t, "scheduler");
    BERTH_TRY(m.scheduler, read_enum(g, "kind", kSchedulers));
    BERTH_TRY(auto seen, g.string("version_seen"));
    m.scheduler_version_seen = seen.value_or("");
    BERTH_TRY(m.scheduler_provenance, g.required_string("provenance"));
    BERTH_CHECK(g.finish());
  }
  {
    BERTH_TRY(const toml::table* t, f.table("launcher"));
    if (!t) return f.error("launcher", "missing");
    TomlFields g = f.sub(*t, "launcher");
    BERTH_TRY(m.launcher, read_enum(g, "kind", kLaunchers));
    BERTH_TRY(auto args, g.strings("args"));
    if (!args) return g.error("args", "missing (write [] for none)");
    m.launcher_args = std::move(*args);
    BERTH_TRY(auto flag, g.string("cpus_per_task_flag"));
    m.cpus_per_task_flag = flag.value_or("");
    BERTH_TRY(m.launcher_provenance, g.required_string("provenance"));
    BERTH_CHECK(g.finish());
    // A launcher belongs to its scheduler; a mismatch would render one system's
    // options for another's launcher.
    bool fits = (m.launcher == LauncherKind::kSrun && m.scheduler == SchedulerKind::kSlurm) ||
                (m.launcher == LauncherKind::kPalsMpiexec && m.scheduler == SchedulerKind::kPbs) ||
                (m.launcher == LauncherKind::kLocal && m.scheduler == SchedulerKind::kNone);
    if (!fits) {
      return g.error("kind",
                     fmt::format("launcher {} does not go with scheduler {}",
                                 launcher_kind_name(m.launcher), scheduler_kind_name(m.scheduler)));
    }
    if (m.launcher != LauncherKind::kLocal && m.cpus_per_task_flag.empty()) {
      return g.error("cpus_per_task_flag", "missing");
    }
  }

  BERTH_TRY(m.cores_per_node, read_figure(f, "cores_per_node", 1, kMaxCores));
  BERTH_TRY(m.max_tasks_per_node, read_figure(f, "max_tasks_per_node", 1, kMaxTasks));
  BERTH_TRY(m.gpus_per_node, read_figure(f, "gpus_per_node", 0, kMaxGpus));
  // memory_per_node.standing says how far the figure can be trusted: surveyed,
  // published, estimate or detected (data/machines/README.md).
  auto standing = [&m](TomlFields& g) -> Result<void> {
    BERTH_TRY(m.memory_standing, read_enum(g, "standing", kStandings));
    return Ok{};
  };
  BERTH_TRY(m.memory_per_node, read_figure(f, "memory_per_node", 1, kMaxMemoryMb, true, standing));
  if ((m.memory_standing == MemoryStanding::kDetected) != m.memory_per_node.detected()) {
    return f.error(root.at_path("memory_per_node.standing").node(), "memory_per_node.standing",
                   "must be 'detected' exactly when the figure is detected");
  }

  {
    BERTH_TRY(const toml::table* t, f.table("gpu"));
    if (t) {
      TomlFields g = f.sub(*t, "gpu");
      BERTH_TRY(auto devices, g.strings("devices"));
      BERTH_TRY(auto var, g.string("visibility_variable"));
      m.gpu_devices = devices.value_or(std::vector<std::string>());
      m.gpu_visibility_variable = var.value_or("");
      if (!m.gpu_visibility_variable.empty() && !Env::valid_name(m.gpu_visibility_variable)) {
        return g.error("visibility_variable", "not a variable name");
      }
      BERTH_TRY(m.gpu_provenance, g.required_string("provenance"));
      BERTH_CHECK(g.finish());
      if (!m.gpu_devices.empty() && m.gpus_per_node.value &&
          static_cast<int64_t>(m.gpu_devices.size()) != *m.gpus_per_node.value) {
        return g.error("devices", fmt::format("names {} devices, but gpus_per_node is {}",
                                              m.gpu_devices.size(), *m.gpus_per_node.value));
      }
    }
  }

  BERTH_TRY(m.binding, read_binding(f, "binding"));
  {
    BERTH_TRY(const toml::table* t, f.table("gpu_build"));
    if (t) {
      TomlFields g = f.sub(*t, "gpu_build");
      GpuBuild b;
      if (g.has("cores_per_node")) {
        BERTH_TRY(b.cores_per_node, read_figure(g, "cores_per_node", 1, kMaxCores, false));
      }
      if (g.has("max_tasks_per_node")) {
        BERTH_TRY(b.max_tasks_per_node, read_figure(g, "max_tasks_per_node", 1, kMaxTasks, false));
      }
      BERTH_TRY(b.binding, read_binding(g, "binding"));
      BERTH_CHECK(g.finish());
      if (!b.cores_per_node && !b.max_tasks_per_node && b.binding.empty()) {
        return f.error("gpu_build", "says nothing the node does not");
      }
      if (b.cores_per_node && m.cores_per_node.value &&
          *b.cores_per_node->value > *m.cores_per_node.value) {
        return g.error(t->at_path("cores_per_node.value").node(), "cores_per_node.value",
                       "more than the node's cores_per_node");
      }
      m.gpu_build = std::move(b);
    }
  }
  BERTH_TRY(m.detect, read_detect(f));
  BERTH_CHECK(f.finish());
  return m;
}

}  // namespace

const char* scheduler_kind_name(SchedulerKind kind) {
  for (const auto& [name, value] : kSchedulers) {
    if (value == kind) return name.data();
  }
  return "none";
}
const char* launcher_kind_name(LauncherKind kind) {
  // Detected, never described: not in kLaunchers, so no description can name them.
  if (kind == LauncherKind::kMpirun) return "mpirun";
  if (kind == LauncherKind::kHydra) return "hydra";
  for (const auto& [name, value] : kLaunchers) {
    if (value == kind) return name.data();
  }
  return "local";
}
const char* memory_standing_name(MemoryStanding standing) {
  for (const auto& [name, value] : kStandings) {
    if (value == standing) return name.data();
  }
  return "detected";
}

std::optional<int> MachineDescription::configured_cores() const {
  if (!cores_per_node.value) return std::nullopt;
  return static_cast<int>(*cores_per_node.value);
}

Result<MachineDescription> parse_machine(std::string_view text, const std::string& path) {
  if (text.size() > kMaxMachineFileBytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: larger than {} bytes", path, kMaxMachineFileBytes));
  }
  BERTH_TRY(toml::table root, parse_toml(text, path));
  return read_description(root, path);
}

}  // namespace berth::topo
