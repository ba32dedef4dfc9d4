// Slurm: the job's nodes from SLURM_JOB_NODELIST, slots from SLURM_TASKS_PER_NODE (or
// SLURM_JOB_CPUS_PER_NODE when asked); inside a job step, the step's. spec 01 §6.1.
#include <fmt/format.h>

#include "alloc/hostlist.h"
#include "alloc/source.h"
#include "alloc/tasks_per_node.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

// Reads the first of `names` that is set, bounded; returns it with the name it came
// from.
Result<std::optional<std::pair<std::string, std::string>>> first_of(
    const Env& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    BERTH_TRY(auto v, env.get_bounded(n));
    if (v) return std::optional<std::pair<std::string, std::string>>({n, *v});
  }
  return std::optional<std::pair<std::string, std::string>>();
}

// The nodes, each with its count, as the allocation found.
SourceResult found(const std::string& job_id, hostlist::Names names,
                   std::vector<int64_t> counts) {
  Found f;
  f.job_id = job_id;
  f.count = names.size();
  // Expanded as the nodes are taken: parsing already refused any list that would fail.
  f.each = [names = std::move(names),
            counts = std::make_shared<const std::vector<int64_t>>(std::move(counts))](
               const NodeSink& add) {
    NodeSpec s;
    s.slots_given = true;  // the scheduler's count is authoritative
    size_t i = 0;
    names.for_each([&](std::string_view name) {
      s.name.assign(name);
      s.slots = (*counts)[i++];
      add(s);
    });
  };
  return std::optional<Found>(std::move(f));
}

// A job step's allocation: its nodes (SLURM_STEP_NODELIST), and on each the CPUs it was
// given there — its tasks (SLURM_STEP_TASKS_PER_NODE) times SLURM_CPUS_PER_TASK, 1 when
// unset — whichever --slurm-slots says: berth inside a step is a worker, or an agent,
// and its steps run on the CPUs srun gave its task (srun -c2: two at a time), not one
// per task.
SourceResult discover_slurm_step(const Input& in, const std::string& job_id,
                                 const std::string& step_id, const std::string& list_text) {
  auto names = hostlist::parse(list_text);
  if (!names.ok()) return names.error().with_context("SLURM_STEP_NODELIST");
  BERTH_TRY(auto count_text, in.env.get_bounded("SLURM_STEP_TASKS_PER_NODE"));
  if (!count_text) {
    return fail(Errc::kInvalidInput,
                "SLURM_STEP_NODELIST is set but SLURM_STEP_TASKS_PER_NODE is not");
  }
  auto counts = parse_tasks_per_node(*count_text, names->size());
  if (!counts.ok()) return counts.error().with_context("SLURM_STEP_TASKS_PER_NODE");
  if (counts->size() != names->size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("SLURM_STEP_TASKS_PER_NODE: gives counts for {} node(s) but "
                            "SLURM_STEP_NODELIST names {}",
                            counts->size(), names->size()));
  }
  {
    BERTH_TRY(auto per_task, in.env.get_bounded("SLURM_CPUS_PER_TASK"));
    int64_t cpus = 1;
    if (per_task) {
      auto n = str::parse_uint(*per_task, 1 << 20);
      if (!n.ok() || *n == 0) {
        return fail(Errc::kInvalidInput,
                    fmt::format("SLURM_CPUS_PER_TASK: '{}' is not a positive count",
                                str::printable(*per_task)));
      }
      cpus = static_cast<int64_t>(*n);
    }
    for (auto& c : *counts) c *= cpus;
  }
  auto f = found(job_id, std::move(*names), std::move(*counts));
  if (f.ok() && *f) (*f)->job_step = step_id;
  return f;
}

}  // namespace

SourceResult discover_slurm(const Input& in) {
  // A Slurm job id is what makes this allocation Slurm's (spec 01 §1): a stray
  // SLURM_NODELIST without one (e.g. left exported by a login script) is not a job.
  BERTH_TRY(auto job, first_of(in.env, {"SLURM_JOB_ID", "SLURM_JOBID"}));
  if (!job) return std::optional<Found>();
  const auto& [job_var, job_id] = *job;
  if (job_id.empty() || !str::parse_uint(job_id, UINT32_MAX).ok()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: '{}' is not a Slurm job id (expected a decimal number)",
                            job_var, str::printable(job_id)));
  }

  // Inside a job step (srun sets SLURM_STEP_ID; a batch script has none) the allocation
  // is the step's, one view of nodes and counts: srun overwrites SLURM_TASKS_PER_NODE
  // with the step's counts but leaves SLURM_JOB_NODELIST and SLURM_NODELIST the job's.
  BERTH_TRY(auto step, first_of(in.env, {"SLURM_STEP_ID", "SLURM_STEPID"}));
  if (step && !str::parse_uint(step->second, UINT32_MAX).ok()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: '{}' is not a Slurm step id (expected a decimal number)",
                            step->first, str::printable(step->second)));
  }
  if (step) {
    BERTH_TRY(auto step_list, in.env.get_bounded("SLURM_STEP_NODELIST"));
    if (step_list) return discover_slurm_step(in, job_id, step->second, *step_list);
  }
  BERTH_TRY(auto list, first_of(in.env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}));
  if (!list) {
    return fail(Errc::kInvalidInput,
                fmt::format("{} is set but neither SLURM_JOB_NODELIST nor SLURM_NODELIST is",
                            job_var));
  }
  const auto& [list_var, list_text] = *list;
  auto names = hostlist::parse(list_text);
  if (!names.ok()) return names.error().with_context(list_var);

  const char* count_var = in.options.slurm_slots == SlurmSlots::kTasks
                              ? "SLURM_TASKS_PER_NODE"
                              : "SLURM_JOB_CPUS_PER_NODE";
  BERTH_TRY(auto count_text, in.env.get_bounded(count_var));
  if (!count_text) {
    return fail(Errc::kInvalidInput, fmt::format("{} is set but {} is not", job_var, count_var));
  }
  auto counts = parse_tasks_per_node(*count_text, names->size());
  if (!counts.ok()) return counts.error().with_context(count_var);
  if (counts->size() != names->size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: gives counts for {} node(s) but {} names {}", count_var,
                            counts->size(), list_var, names->size()));
  }

  return found(job_id, std::move(*names), std::move(*counts));
}

}  // namespace berth::alloc
