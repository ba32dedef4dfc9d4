// LaunchStepRunner (launch_runner.h).
#include "pipeline/launch_runner.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "launch/directives.h"
#include "launch/job.h"
#include "launch/read_only.h"
#include "pipeline/beside.h"
#include "pipeline/canonical.h"
#include "pipeline/canonicaliser.h"
#include "pipeline/command.h"
#include "pipeline/dir_output.h"
#include "pipeline/kept_failure.h"
#include "pipeline/leftovers.h"
#include "pipeline/step_publish.h"
#include "pipeline/worker.h"
#include "place/pool.h"
#include "place/render.h"
#include "store/tree.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// The canonical hash of an output file under `form`.
Result<CanonicalHash> hash_output(const std::string& path, const std::string& form_text,
                                  const std::string& object, const Env& env) {
  BERTH_TRY(CanonicalForm form, parse_canonical_form(form_text));
  if (form.kind == CanonicalForm::Kind::kBytes) return CanonicalHash{form.name(), object};
  BERTH_TRY(std::string bytes, files::read_file(path, 1ull << 32));
  // A user's canonicaliser runs in the step's staging directory, like the step.
  std::string cwd = fs::path(path).parent_path().parent_path().string();
  CommandHook hook = [&cwd, &env](const std::vector<std::string>& argv, std::string_view in) {
    return run_canonicaliser(argv, in, env, cwd);
  };
  return canonical_hash(form, bytes, hook);
}

}  // namespace

double LaunchStepRunner::now_s() const {
  return std::chrono::duration<double>(clock().steady() - t0_).count();
}

void LaunchStepRunner::begin(const RunStart& run) {
  cache_ = run.cache;
  tools_ = run.tools;
  t0_ = run.t0;
  announce_early_ = !run.leases;
  record_settled_ = run.record_settled;
}

void LaunchStepRunner::start(StepTask task, Events events) {
  reap_finished();
  size_t step = task.step;
  std::lock_guard<std::mutex> lock(mu_);
  threads_.emplace(step, std::thread([this, task = std::move(task), events = std::move(events)] {
                     bool released = false;
                     Events once = events;
                     // The placement is freed once: when the processes end, or here for a step that
                     // failed before it launched.
                     once.exited = [&released, &events] {
                       if (released) return;
                       released = true;
                       events.exited();
                     };
                     StepResult d = execute(task, once);
                     once.exited();
                     {
                       std::lock_guard<std::mutex> l(mu_);
                       finished_.push_back(task.step);
                     }
                     events.done(std::move(d));
                   }));
}

void LaunchStepRunner::reap_finished() {
  std::vector<std::thread> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t step : finished_) {
      auto t = threads_.find(step);
      if (t == threads_.end()) continue;
      gone.push_back(std::move(t->second));
      threads_.erase(t);
    }
    finished_.clear();
  }
  for (auto& t : gone) t.join();
}

void LaunchStepRunner::join() {
  std::map<size_t, std::thread> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(threads_);
    finished_.clear();
  }
  for (auto& [step, t] : all) t.join();
}

// One step on its way through the stages: what they share, from its staging directory
// to what became of it. It lives on the step's thread. A stage that returns false has
// stopped the step: its result is in `d` then, and nothing of it is published.
struct LaunchStepRunner::Attempt {
  Attempt(const StepTask& task, std::string started_at)
      : t(task), s(*task.spec), p(task.placement), started(std::move(started_at)) {
    d.step = t.step;
    d.record = t.record;
  }
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  const StepTask& t;
  const Step& s;
  const place::Placement& p;
  StepResult d;
  StepRecord& r = d.record;
  std::string started;  // when it started (UTC), for its provenance
  bool agent = false;   // run by its node's agent (spec 08)
  std::string stage;    // its staging directory; "" once released
  // What the step left beside its outputs, found while its directory is emptied.
  std::vector<std::string> left;
  StagedPaths paths;
  json prov_inputs = json::object();  // its inputs as staged, for its provenance
  // The file input items, in input order, and whether each was hard-linked in.
  std::vector<std::pair<const InputItem*, bool>> files_in;
  RenderedCommand cmd;
  // The command as launched and its environment's directives: what a kept failure
  // reproduces. `launched`: its processes were started and have ended, with
  // `exit_status` (0 for a step that failed after exiting 0: an output not written).
  std::vector<std::string> argv;
  std::vector<launch::EnvDirective> env;
  bool launched = false;
  int exit_status = 0;
  // Its output, stdout and stderr together, as the job forwards it.
  std::string log;
  std::mutex log_mu;
  bool ended = false;             // end_s is set
  bool announced = false;         // its dependents had its outputs before its row
  json outputs = json::object();  // each output's record, as its row names it
};

StepResult LaunchStepRunner::execute(const StepTask& t, const Events& events) {
  Attempt a(t, utc_text(clock().wall()));
  // 1. An empty staging directory of its own: inputs linked in, outputs written there,
  //    its command rendered on their paths.
  if (!stage_inputs(a) || !stage_outputs(a)) return std::move(a.d);
  // 2. Launched, bound to its cores here or through the machine's launcher; its
  //    placement freed as soon as its processes have ended, its output kept.
  auto job = job_for(a);
  if (!job) return std::move(a.d);
  auto outcome = run_step(a, std::move(*job), events);
  if (!outcome || !succeeded(a, *outcome)) return std::move(a.d);
  // 3. Every file input stamped again: one changed while it ran fails the step.
  if (!inputs_unchanged(a)) return std::move(a.d);
  // 4. Every output stored and hashed; then, and only then, the row.
  if (!store_outputs(a) || !publish(a, events)) return std::move(a.d);
  // 5. Its results materialised, its staging directory emptied for the next step.
  finish(a);
  return std::move(a.d);
}

void LaunchStepRunner::end_now(Attempt& a) {
  // end_s is when the step's processes ended (or it failed before they started): its
  // cores are given to the next step then, so a later end would overlap that step on
  // the same cores in the report's timeline. Publishing is berth's time, not the step's.
  if (a.ended) return;
  a.ended = true;
  a.r.end_s = now_s();
}

void LaunchStepRunner::cleanup(Attempt& a) {
  if (a.stage.empty()) return;
  staging_.release(std::move(a.stage), &a.left);
  a.stage.clear();
}

bool LaunchStepRunner::fail(Attempt& a, std::string why, int code) {
  a.r.state = StepState::kFailed;
  a.r.reason = std::move(why);
  a.r.exit_code = code;
  if (!a.log.empty()) a.r.log_tail = log_tail(a.log);
  end_now(a);
  keep_failed(a);
  // A staging directory is emptied for the next step: the reason names what was in it
  // by its place there ("out/x"), never by a path that is gone when the user looks.
  if (!a.stage.empty()) a.r.reason = rebase_paths(a.r.reason, a.stage, "");
  cleanup(a);
  return false;
}

void LaunchStepRunner::keep_failed(Attempt& a) {
  // Only a step that ran: before that there is nothing it did to reproduce.
  if (o_.keep_failed.empty() || a.stage.empty() || !a.launched) return;
  FailedStep f{a.s.name, a.stage, a.argv, parent_, a.exit_status, a.log};
  if (auto set = launch::apply_directives(a.env, parent_, f.env); !set.ok()) return;
  auto kept = keep_failed_step(f, o_.keep_failed);
  if (!kept.ok()) {
    a.d.problems.push_back(fmt::format("step '{}': its staging directory was not kept: {}",
                                       a.s.name, kept.error().message()));
    return;
  }
  a.r.reason = rebase_paths(a.r.reason, a.stage, *kept) +
               fmt::format("; kept in {} (./command.sh there runs it again)", *kept);
  a.stage.clear();  // moved: not the staging area's any more
}

bool LaunchStepRunner::stage_inputs(Attempt& a) {
  auto staged = staging_.acquire();
  if (!staged.ok()) return fail(a, staged.error().message());
  a.stage = std::move(*staged);
  size_t next_upstream = 0;
  const auto layout = staged_layout(a.s.inputs);
  for (const auto& [name, input] : a.s.inputs) {
    json items = json::array();
    for (size_t k = 0; k < input.items.size(); ++k) {
      const InputItem& item = input.items[k];
      // A file beside the pipeline its command names goes where the command looks for
      // it: at its own relative path (beside.h); every other input under in/, by name.
      const std::string beside = beside_path_of(name);
      std::string dest = staged_path(a.stage, beside.empty() ? layout.at(name)[k] : beside);
      if (item.kind == InputItem::Kind::kFile) {
        auto linked = stage_input(item.path, dest);
        if (!linked.ok()) return fail(a, linked.error().message());
        a.files_in.emplace_back(&item, *linked);
        items.push_back({{"file", item.text}});
      } else {
        const auto& rec = a.t.upstream.at(next_upstream++);
        // An upstream directory output is staged as the directory in/<name>/.
        auto got = is_tree(rec) ? store::materialize_tree(cache_->objects(), rec.object, dest)
                                : cache_->objects().materialize(rec.object, dest);
        if (!got.ok()) return fail(a, got.error().message());
        if (!got->present()) {
          return fail(a, fmt::format("input '{}' ({}) is not in the store: {}", name, item.text,
                                     got->problem));
        }
        items.push_back({{"step", g_.steps[item.step].name},
                         {"output", item.output},
                         {"object", rec.object},
                         {"canonical", rec.form + " " + rec.canonical}});
      }
      a.paths.inputs[name].push_back(dest);
    }
    a.prov_inputs[name] = std::move(items);
  }
  return true;
}

bool LaunchStepRunner::stage_outputs(Attempt& a) {
  for (const std::string& out : a.s.outputs) {
    a.paths.outputs[out] = a.stage + "/out/" + out;
    // A directory output is there, empty, for the step to fill.
    if (a.s.canonical.count(out) && a.s.canonical.at(out) == kTreeForm &&
        ::mkdir(a.paths.outputs[out].c_str(), 0777) != 0) {
      return fail(a,
                  fmt::format("cannot create {}: {}", a.paths.outputs[out], std::strerror(errno)));
    }
  }
  auto cmd = render_command(a.s, a.paths);
  if (!cmd.ok()) return fail(a, cmd.error().message());
  a.cmd = std::move(*cmd);
  return true;
}

std::optional<launch::JobSpec> LaunchStepRunner::job_for(Attempt& a) {
  launch::JobSpec job;
  launch::AppSpec app;
  app.ranks = 1;
  app.cwd = a.stage;
  // On this node, or on another by its agent: one job, bound there (bind_here).
  a.agent = by_agent(a);
  if (!a.agent && o_.agents != nullptr && a.p.nodes.size() == 1 && o_.agents->knows(a.r.node) &&
      !o_.agents->serves(a.r.node)) {
    // Placed on a node whose agent was lost before the pool heard: it goes back to the
    // queue, and the node out of the pool, rather than any other way to that node.
    a.d.lost_node = a.r.node;  // nothing ran: its staging directory is reused
    fail(a, fmt::format("the agent on '{}' was lost", a.r.node));
    return std::nullopt;
  }
  bool here = a.r.node == o_.host || a.agent;
  job.bind = launch::BindTo::kNone;  // its tasks bound to cores of their own (bind_here)
  // What its grant could not do as it should (cores away from its GPUs) goes with it.
  a.r.notices.insert(a.r.notices.end(), a.p.notes.begin(), a.p.notes.end());
  if (here) {
    bind_here(a, job, app);
  } else if (!through_launcher(a, app)) {
    return std::nullopt;
  }
  for (const auto& [k, v] : a.cmd.env)
    app.env.push_back({launch::EnvDirective::kSet, k, v, "", false});
  a.argv = app.argv;
  a.env = app.env;
  job.apps.push_back(app);
  // A step's tasks on this node are one MPI job on berth's own wire-up; through a
  // launcher, the launcher's wire-up serves them (place::render asks for it).
  job.mpi = here ? a.s.mpi : wireup::Mode::kNone;
  job.node = here ? a.r.node : o_.host;
  job.stdin_mode = launch::StdinMode::kNone;
  job.own_signals = false;
  job.cancel_fd = o_.cancel_fd;
  // Past its time limit the step's every process group gets SIGCONT, SIGTERM and, after
  // the grace period, SIGKILL; then every group once more with SIGKILL (job.h), so that
  // nothing it started outlives it.
  job.timeout = a.s.timeout;
  job.output = launch::OutputMode::kPlain;
  return job;
}

void LaunchStepRunner::bind_here(Attempt& a, launch::JobSpec& job, launch::AppSpec& app) {
  const Step& s = a.s;
  const place::Placement& p = a.p;
  app.argv = a.cmd.argv;
  app.cpu_set = p.cores.empty() ? std::vector<int>{} : p.cores[0];
  app.ranks = s.tasks;
  // Its inputs are links to the user's files and to stored objects: it sees them
  // read-only, so that a write through one fails rather than change the original
  // (read_only.h). Where this node does not allow that, the run says so once.
  const Result<void>& protect = launch::read_only_support();
  if (protect.ok()) {
    for (const auto& [name, dests] : a.paths.inputs) {
      app.read_only.insert(app.read_only.end(), dests.begin(), dests.end());
    }
  }
  // Its tasks are bound to cores of their own, as berth launch -n binds them, and
  // split its GPUs evenly, each its own (spec 03 §2).
  const int tasks = std::max(1, s.tasks);
  if (tasks > 1 && !app.cpu_set->empty()) {
    job.bind = launch::BindTo::kCore;
    app.cpus_per_rank = std::max(1, static_cast<int>(app.cpu_set->size()) / tasks);
  }
  const bool per_rank =
      tasks > 1 && !p.gpu_ids.empty() && p.gpu_ids.size() % static_cast<size_t>(tasks) == 0;
  if (per_rank) {
    job.gpus = {static_cast<int>(p.gpu_ids.size()) / tasks, p.gpu_variable, p.gpu_ids, {}};
  } else {
    // Its GPUs in its vendor's variable: the ids it was granted, and with none an
    // explicit none, so that no step sees a GPU it was not given (spec 02 §4).
    for (const auto& [k, v] : launch::gpu_env(p.gpu_variable, p.gpu_ids, parent_)) {
      app.env.push_back({launch::EnvDirective::kSet, k, v, "", false});
    }
  }
  if (!protect.ok() && !a.paths.inputs.empty() && !told_unprotected_.exchange(true)) {
    a.r.notices.push_back(
        fmt::format("{}; steps' inputs are not protected from writes, and a "
                    "step that writes to one changes the original",
                    protect.error().message()));
  }
  if (s.memory_cap_mb) {
    // berth sets no memory limit on this node (no cgroup of its own): say so with the
    // step rather than let a cap look kept.
    a.r.notices.push_back(
        fmt::format("memory_cap_mb = {} is not enforced: the step ran on "
                    "{}, where berth sets no memory limit",
                    *s.memory_cap_mb, a.agent ? "'" + a.r.node + "' (by its agent)" : "this node"));
  }
}

bool LaunchStepRunner::through_launcher(Attempt& a, launch::AppSpec& app) {
  const Step& s = a.s;
  if (!o_.machine || !o_.launcher) {
    return fail(a, fmt::format("placed on '{}', but no launcher reaches other nodes", a.r.node));
  }
  // Read-only inputs are made on this node only (read_only.h): said once per run.
  if (!a.paths.inputs.empty() && !told_remote_.exchange(true)) {
    a.r.notices.push_back(
        fmt::format("placed on '{}' through the launcher: steps on other nodes see their inputs "
                    "writable, and a step that writes to one changes the original",
                    a.r.node));
  }
  place::LaunchSpec ls;
  ls.tasks = s.tasks;
  ls.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
  ls.command = a.cmd.argv;
  ls.memory_cap = s.memory_cap_mb;
  ls.mpi = s.mpi;
  auto rendered = place::render(*o_.machine, *o_.launcher, a.p, ls);
  if (!rendered.ok()) {
    // Refused by the launcher (a wire-up it cannot give, a placement it cannot
    // honour): nothing of the step ran, and it says so rather than "failed".
    if (rendered.error().code() == Errc::kRefused) {
      fail(a, rendered.error().message(), 0);
      a.r.state = StepState::kRefused;
      return false;
    }
    return fail(a, rendered.error().message());
  }
  app.argv = rendered->argv;
  // What the launcher will not do (an unenforced cap, no --mpi) goes with the step.
  for (const auto& note : rendered->notes) a.r.notices.push_back(note);
  return true;
}

std::optional<launch::JobOutcome> LaunchStepRunner::run_step(Attempt& a, launch::JobSpec job,
                                                             const Events& events) {
  const bool here = a.r.node == o_.host;
  // Its output is kept for its report, and shown on the live board as it comes.
  LiveBoard::Entry live;
  if (o_.live != nullptr) live = o_.live->started(a.s.name, a.r.node, a.p);
  launch::OutputSinks sinks;
  sinks.out = [&a, &live](std::string_view line) {
    std::lock_guard<std::mutex> lock(a.log_mu);
    a.log.append(line);
    LiveBoard::write(live, line);
  };
  sinks.err = sinks.out;
  // Which GPUs its processes really held, where NVML can say (gpu_proof.h).
  std::string unchecked;
  auto proof = here && !a.agent ? gpu_proof_.begin(a.p, a.s.name, &unchecked) : nullptr;
  if (!unchecked.empty()) a.r.notices.push_back(std::move(unchecked));
  if (auto mig = GpuProof::mig_limit_notice(a.p)) a.r.notices.push_back(std::move(*mig));
  if (proof) job.on_started = [&proof](int, pid_t pgid) { proof->started(pgid); };
  launch::Spawner& spawner = o_.spawner != nullptr ? *o_.spawner : launch::Spawner::real();
  auto outcome = a.agent ? o_.agents->run(a.r.node, job, sinks)
                             : launch::run_job(job, parent_, spawner, sinks);
  if (proof) {
    for (std::string& n : proof->finish()) a.r.notices.push_back(std::move(n));
  }
  // Its processes are gone: the cores and GPUs go back to the pool now, and the next
  // step starts while this one is hashed and published (that work is berth's own).
  end_now(a);
  if (o_.live != nullptr) o_.live->ended(live, outcome.ok() ? outcome->exit_code : 1);
  events.exited();
  if (!outcome.ok()) {
    if (outcome.error().code() == Errc::kUnavailable && a.agent) lost(a);
    fail(a, outcome.error().message());
    return std::nullopt;
  }
  a.launched = true;
  a.exit_status = outcome->exit_code;
  return std::move(*outcome);
}

bool LaunchStepRunner::by_agent(const Attempt& a) const {
  // A memory cap the launcher enforces (srun's --mem) is kept: such a step goes through
  // it, since an agent sets no memory limit (spec 08 §4).
  if (a.s.memory_cap_mb && o_.launcher != nullptr &&
      place::memory_cap_support(*o_.launcher) == place::CapSupport::kEnforced) {
    return false;
  }
  // This node too, where it has an agent (--agents all).
  return o_.agents != nullptr && a.p.nodes.size() == 1 && o_.agents->serves(a.r.node);
}

void LaunchStepRunner::lost(Attempt& a) {
  // Its processes may live on there, still writing into its staging directory: the
  // directory is left as it is, never handed to another step (the next run sweeps it).
  a.d.lost_node = a.r.node;
  a.stage.clear();
}

bool LaunchStepRunner::succeeded(Attempt& a, const launch::JobOutcome& outcome) {
  // Its output is kept, whatever became of the step: an object named in its record and
  // its row, which `berth log` prints (spec 04 §7.3). Losing it is a problem, not a
  // failure.
  if (auto name = cache_->objects().put_object(a.log); name.ok()) {
    a.r.log = *name;
  } else {
    a.d.problems.push_back(
        fmt::format("step '{}': its output was not kept: {}", a.s.name, name.error().message()));
  }
  // Each step's output reaches its sink once, whole, after the step.
  if (!a.log.empty() && o_.output) o_.output(a.s.name, a.log);
  if (outcome.timed_out) {
    // Nothing of it is stored: its outputs may be half written.
    a.r.timed_out = true;
    return fail(a,
                fmt::format("timed out after {}: its processes were ended (SIGTERM, then "
                            "SIGKILL); nothing of it is stored",
                            duration_text(*a.s.timeout)),
                outcome.exit_code);
  }
  if (outcome.exit_code == 0) return true;
  if (outcome.exit_code == 130) {
    a.r.state = StepState::kCancelled;
    a.r.reason = "cancelled";
    if (!a.log.empty()) a.r.log_tail = log_tail(a.log);
    cleanup(a);
    return false;
  }
  return fail(a, outcome.messages.empty() ? "failed" : outcome.messages[0], outcome.exit_code);
}

bool LaunchStepRunner::inputs_unchanged(Attempt& a) {
  // Every file input it read still has the stamp its hash is of: otherwise its
  // outputs may come from bytes the key does not name, and are not stored. (A hard
  // link made for staging changed the ctime: that one is not compared.)
  const std::vector<FileStamp>& stamps = a.t.stamps;
  for (size_t k = 0; k < a.files_in.size() && k < stamps.size(); ++k) {
    auto now = FileStamp::of(a.files_in[k].first->path);
    FileStamp want = stamps[k];
    if (now.ok() && a.files_in[k].second) now->ctime_ns = want.ctime_ns;
    if (!now.ok() || *now != want) {
      return fail(a, fmt::format("input {} changed while the step ran; its outputs are not "
                                 "stored, and it runs again next time",
                                 str::printable(a.files_in[k].first->text, 200)));
    }
  }
  return true;
}

bool LaunchStepRunner::store_outputs(Attempt& a) {
  const Step& s = a.s;
  for (const std::string& out : s.outputs) {
    const std::string& path = a.paths.outputs[out];
    if (!files::exists(path)) {
      return fail(a, fmt::format("declared output '{}' was not written ({})", out, path));
    }
    if (s.canonical.count(out) && s.canonical.at(out) == kTreeForm) {
      // A directory output: its files handed over, then its manifest (store/tree.h).
      auto tree = store::put_tree(cache_->objects(), path);
      if (!tree.ok()) return fail(a, tree.error().with_context("output '" + out + "'").message());
      a.r.outputs[out] = {*tree, std::string(kTreeForm), *tree};
      a.outputs[out] = output_json(a.r.outputs[out]);
      continue;
    }
    if (std::error_code ec; fs::is_directory(path, ec)) {
      return fail(a, fmt::format("output '{}' is a directory: declare it as \"{}/\" to store "
                                 "it as a tree",
                                 out, out));
    }
    // The output is handed over: the store may make it the stored copy (no copy).
    auto object = cache_->objects().adopt_object_file(path);
    if (!object.ok()) return fail(a, object.error().message());
    auto canon =
        hash_output(path, s.canonical.count(out) ? s.canonical.at(out) : "bytes", *object, parent_);
    if (!canon.ok()) return fail(a, canon.error().with_context("output '" + out + "'").message());
    a.r.outputs[out] = {*object, canon->form, canon->hash};
    a.outputs[out] = output_json(a.r.outputs[out]);
  }
  return true;
}

bool LaunchStepRunner::publish(Attempt& a, const Events& events) {
  const Step& s = a.s;
  const std::string& key = a.t.key;
  // In a run without leases nobody else is expected to publish this key, so its
  // dependents need not wait for the row to be durable: they start now. A row that
  // then fails to be written costs the cache entry (a problem), not the step.
  a.announced = announce_early_ && events.known;
  if (a.announced) events.known(a.r.outputs);
  ProvenanceContext who{o_.engine_version, o_.platform, o_.worker, tools_, a.started, ""};
  who.end = utc_text(clock().wall());
  json prov = step_provenance(s, a.r, a.p, std::move(a.prov_inputs), who);
  std::string mine = step_row_text(key, s.name, a.outputs, a.r.log, prov);
  auto put = put_step_row(cache_->rows(), store::row_address(kStepsRow, key), mine);
  if (!put.ok() && !a.announced) return fail(a, put.error().message());
  a.r.computed_by = computed_by(prov);
  if (!put.ok()) {
    // Its dependents have its outputs already, and its results are materialised
    // below: only the cache entry is lost.
    a.d.problems.push_back(
        fmt::format("step '{}': its row was not written: {}; it will be "
                    "recomputed next time",
                    s.name, put.error().message()));
  } else if (!put->created) {
    // Another computation of this key published first: the winner's row is in force.
    adopt_winner(put->existing, s.name, key, a.d);
  }
  if (cache_->index() && put.ok()) {
    cache_->index()->remember_step(key, put->created ? mine : put->existing);
  }
  a.d.row_ours = put.ok() && put->created;
  // Every object the row names is there now, or is stored again from the file still
  // in staging.
  if (a.d.row_ours) make_sure_of_objects(cache_->objects(), a.paths.outputs, s.name, a.d);
  return true;
}

void LaunchStepRunner::finish(Attempt& a) {
  auto m = cache_->materialize(a.r, &a.d.problems, record_settled_ ? &a.d.results : nullptr);
  cleanup(a);
  // What it left beside its outputs was removed with the directory: said, by name.
  if (auto note = leftovers_notice(undeclared_files(a.left, a.s.outputs, staged_beside(a.s)))) {
    a.r.notices.push_back(std::move(*note));
  }
  if (!m.ok()) {
    if (!a.announced) {
      fail(a, m.error().message());
      return;
    }
    a.d.problems.push_back(fmt::format("step '{}': {}", a.s.name, m.error().message()));
  }
  a.r.state = StepState::kExecuted;
  a.r.exit_code = 0;
}

}  // namespace berth::pipeline
