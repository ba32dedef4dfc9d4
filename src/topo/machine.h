// MachineDescription: what berth knows about a machine before it runs on it.
//
// Machine descriptions are data files shipped with berth (data/machines/<name>.toml,
// whose format data/machines/README.md describes). Each says how the machine's nodes
// are scheduled and launched, what they have (cores, tasks, GPUs, memory) and how
// its own configuration binds launches — and every figure carries its provenance,
// because a figure nobody can trace is a figure nobody can correct: each says whether
// it rests on a survey of the whole machine, a sample of a node or two, or nothing but
// the site's documentation.
// A figure may instead be detected at run time (`detect = true`), which is how
// `generic` describes a single node.
//
// What a description does not say: the launcher's version. The placement mechanism is
// decided at run time from the launcher actually present, never from configuration
// (spec 02 §3): a machine upgraded across Slurm 20.11 with a stale description would
// accept the command and silently place nothing. `scheduler.version_seen` is a note
// for readers, never an input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace berth::topo {

enum class SchedulerKind { kNone, kSlurm, kPbs };
// kMpirun (Open MPI's mpirun) and kHydra (MPICH's mpiexec.hydra) are never named in a
// description: berth finds them at run time under Grid Engine, LSF and hostfile
// allocations (place/mpi_launcher.h, spec 02 §8).
enum class LauncherKind { kLocal, kSrun, kPalsMpiexec, kMpirun, kHydra };
// How far a memory figure can be trusted: how it was measured, or detected at run time.
enum class MemoryStanding {
  kSurveyed,   // read off every node of the machine: the smallest any reports
  kPublished,  // the site's published figure, not measured by us
  kEstimate,   // an estimate, rounded down; never measured
  kDetected,   // no figure shipped; read from the node at run time
};

// Names as the files spell them: "none"/"slurm"/"pbs", "local"/"srun"/"pals-mpiexec"
// (and "mpirun"/"hydra", which no file spells), "surveyed"/"published"/"estimate"/"detected".
const char* scheduler_kind_name(SchedulerKind kind);
const char* launcher_kind_name(LauncherKind kind);
const char* memory_standing_name(MemoryStanding standing);

// One figure of a description and where it came from.
struct Figure {
  std::optional<int64_t> value;  // absent: detected at run time
  std::string provenance;
  bool detected() const { return !value.has_value(); }
};

// A machine's own binding options, as its configuration gives them. The renderer
// keeps these only where they do not contradict a placement (spec 02 §2: a gpu_bind of
// "none" gave 3 of 4 concurrent placed launches on Perlmutter GPU no GPU at all).
struct Binding {
  std::string cpu_bind;      // "cores", "threads", "list:1-8:9-16:..."; "" none given
  std::string distribution;  // "plane", "block:cyclic"
  std::string gpu_bind;      // "none", "closest"
  std::string mem_bind;      // "list:0:0:...:1"
  std::string provenance;    // required when any option is given
  bool empty() const {
    return cpu_bind.empty() && distribution.empty() && gpu_bind.empty() && mem_bind.empty();
  }
};

// How the machine's GPU builds launch, where they differ from its CPU builds: one
// task per GPU, fewer cores, their own binding (Aurora: 96 cores, 12 tasks). A figure
// not given is the node's.
struct GpuBuild {
  std::optional<Figure> cores_per_node;
  std::optional<Figure> max_tasks_per_node;
  Binding binding;
};

// A heuristic for recognising the machine from inside it: every condition given
// must hold. Patterns are fnmatch(3) globs.
struct DetectRule {
  std::vector<std::pair<std::string, std::string>> env;  // variable, pattern
  std::string hostname;                                  // "" = any host
  std::optional<bool> gpus_present;                      // "present" / "absent"
};

struct MachineDescription {
  std::string name;         // the file's stem: "pm-cpu"
  std::string description;  // one line for people
  std::string source;       // the file it was read from, for messages

  SchedulerKind scheduler = SchedulerKind::kNone;
  std::string scheduler_version_seen;  // a note, never an input (see above)
  std::string scheduler_provenance;

  LauncherKind launcher = LauncherKind::kLocal;
  std::vector<std::string> launcher_args;  // fixed arguments after the launcher
  std::string cpus_per_task_flag;          // "--cpus-per-task", PALS "--depth"
  std::string launcher_provenance;

  Figure cores_per_node;      // physical cores a job may use
  Figure max_tasks_per_node;  // MPI tasks per node
  Figure gpus_per_node;       // GPUs as the visibility variable counts them (tiles)
  Figure memory_per_node;     // MB a job may use, not the hardware total
  MemoryStanding memory_standing = MemoryStanding::kDetected;

  std::vector<std::string> gpu_devices;  // device names where given (Aurora's tiles)
  std::string gpu_visibility_variable;   // where nothing assigns GPUs (PALS)
  std::string gpu_provenance;            // required when either is given

  Binding binding;
  std::optional<GpuBuild> gpu_build;
  std::vector<DetectRule> detect;

  // cores_per_node as the count topo::select_cores holds usable ids to; absent when
  // it is detected (no cap).
  std::optional<int> configured_cores() const;
};

// The largest file parse_machine() reads: descriptions are a few KiB.
inline constexpr size_t kMaxMachineFileBytes = 256 * 1024;

// Parses one description. `path` names the file in messages ("data/machines/x.toml")
// and its stem must equal the `name` key. Never throws; fails (kInvalidInput) on any
// input that is not a complete description, with a message naming the file and the
// key ("data/machines/aurora.toml: memory_per_node.provenance: missing"), or the
// line and column of a TOML syntax error. Every figure must have a value (or
// `detect = true`) and a non-empty provenance; unknown keys are errors, so a
// misspelt option cannot be silently ignored.
Result<MachineDescription> parse_machine(std::string_view text, const std::string& path);

}  // namespace berth::topo
