// LaunchStepRunner (launch_runner.h).
#include "pipeline/launch_runner.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "launch/job.h"
#include "launch/read_only.h"
#include "pipeline/beside.h"
#include "pipeline/canonical.h"
#include "pipeline/canonicaliser.h"
#include "pipeline/command.h"
#include "pipeline/dir_output.h"
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
  return std::chrono::duration<double>(clock().steady() - o_.t0).count();
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

StepResult LaunchStepRunner::execute(const StepTask& t, const Events& events) {
  const Step& s = *t.spec;
  const size_t i = t.step;
  const place::Placement& p = t.placement;
  const std::string& key = t.key;
  const std::vector<StepRecord::Output>& upstream = t.upstream;
  const std::vector<FileStamp>& stamps = t.stamps;
  (void)i;
  StepResult d;
  d.step = t.step;
  d.record = t.record;
  StepRecord& r = d.record;
  std::string started = utc_text(clock().wall());
  std::string stage;
  // What the step left beside its outputs, found while its directory is emptied.
  std::vector<std::string> left;
  auto cleanup = [&] {
    if (stage.empty()) return;
    staging_.release(std::move(stage), &left);
    stage.clear();
  };
  // end_s is when the step's processes ended (or it failed before they started): its
  // cores are given to the next step then, so a later end would overlap that step on
  // the same cores in the report's timeline. Publishing is berth's time, not the step's.
  // Its output, stdout and stderr together, as the job forwards it.
  std::string log;
  std::mutex log_mu;
  bool ended = false;
  auto end_now = [&] {
    if (ended) return;
    ended = true;
    r.end_s = now_s();
  };
  auto failed = [&](std::string why, int code = 1) {
    r.state = StepState::kFailed;
    r.reason = std::move(why);
    r.exit_code = code;
    if (!log.empty()) r.log_tail = log_tail(log);
    end_now();
    cleanup();
    return d;
  };

  // 1. An empty staging directory of its own: inputs linked in, outputs written there.
  auto staged = staging_.acquire();
  if (!staged.ok()) return failed(staged.error().message());
  stage = std::move(*staged);
  StagedPaths paths;
  json prov_inputs = json::object();
  size_t next_upstream = 0;
  // The file input items, in input order, and whether each was hard-linked in.
  std::vector<std::pair<const InputItem*, bool>> files_in;
  const auto layout = staged_layout(s.inputs);
  for (const auto& [name, input] : s.inputs) {
    json items = json::array();
    for (size_t k = 0; k < input.items.size(); ++k) {
      const InputItem& item = input.items[k];
      // A file beside the pipeline its command names goes where the command looks for
      // it: at its own relative path (beside.h); every other input under in/, by name.
      const std::string beside = beside_path_of(name);
      std::string dest = staged_path(stage, beside.empty() ? layout.at(name)[k] : beside);
      if (item.kind == InputItem::Kind::kFile) {
        auto linked = stage_input(item.path, dest);
        if (!linked.ok()) return failed(linked.error().message());
        files_in.emplace_back(&item, *linked);
        items.push_back({{"file", item.text}});
      } else {
        const auto& rec = upstream.at(next_upstream++);
        // An upstream directory output is staged as the directory in/<name>/.
        auto got = is_tree(rec) ? store::materialize_tree(cache_.objects(), rec.object, dest)
                                : cache_.objects().materialize(rec.object, dest);
        if (!got.ok()) return failed(got.error().message());
        if (!got->present()) {
          return failed(fmt::format("input '{}' ({}) is not in the store: {}", name, item.text,
                                    got->problem));
        }
        items.push_back({{"step", g_.steps[item.step].name},
                         {"output", item.output},
                         {"object", rec.object},
                         {"canonical", rec.form + " " + rec.canonical}});
      }
      paths.inputs[name].push_back(dest);
    }
    prov_inputs[name] = std::move(items);
  }
  for (const std::string& out : s.outputs) {
    paths.outputs[out] = stage + "/out/" + out;
    // A directory output is there, empty, for the step to fill.
    if (s.canonical.count(out) && s.canonical.at(out) == kTreeForm &&
        ::mkdir(paths.outputs[out].c_str(), 0777) != 0) {
      return failed(fmt::format("cannot create {}: {}", paths.outputs[out], std::strerror(errno)));
    }
  }
  auto cmd = render_command(s, paths);
  if (!cmd.ok()) return failed(cmd.error().message());

  // 2. Launch: bound to its cores on this node, or through the machine's launcher.
  launch::JobSpec job;
  bool bind_ranks = false;  // its tasks bound to cores of their own (below)
  launch::AppSpec app;
  app.ranks = 1;
  app.cwd = stage;
  bool here = r.node == o_.host;
  // What its grant could not do as it should (cores away from its GPUs) goes with it.
  r.notices.insert(r.notices.end(), p.notes.begin(), p.notes.end());
  if (here) {
    app.argv = cmd->argv;
    app.cpu_set = p.cores.empty() ? std::vector<int>{} : p.cores[0];
    app.ranks = s.tasks;
    // Its inputs are links to the user's files and to stored objects: it sees them
    // read-only, so that a write through one fails rather than change the original
    // (read_only.h). Where this node does not allow that, the run says so once.
    const Result<void>& protect = launch::read_only_support();
    if (protect.ok()) {
      for (const auto& [name, dests] : paths.inputs) {
        app.read_only.insert(app.read_only.end(), dests.begin(), dests.end());
      }
    }
    // Its tasks are bound to cores of their own, as berth launch -n binds them, and
    // split its GPUs evenly, each its own (spec 03 §2).
    const int tasks = std::max(1, s.tasks);
    if (tasks > 1 && !app.cpu_set->empty()) {
      bind_ranks = true;
      app.cpus_per_rank = std::max(1, static_cast<int>(app.cpu_set->size()) / tasks);
    }
    const bool per_rank = tasks > 1 && !p.gpu_ids.empty() &&
                          p.gpu_ids.size() % static_cast<size_t>(tasks) == 0;
    if (per_rank) {
      job.gpus = {static_cast<int>(p.gpu_ids.size()) / tasks, p.gpu_variable, p.gpu_ids, {}};
    } else {
      // Its GPUs in its vendor's variable: the ids it was granted, and with none an
      // explicit none, so that no step sees a GPU it was not given (spec 02 §4).
      for (const auto& [k, v] : launch::gpu_env(p.gpu_variable, p.gpu_ids, parent_)) {
        app.env.push_back({launch::EnvDirective::kSet, k, v, "", false});
      }
    }
    if (!protect.ok() && !paths.inputs.empty() && !told_unprotected_.exchange(true)) {
      r.notices.push_back(fmt::format("{}; steps' inputs are not protected from writes, and a "
                                      "step that writes to one changes the original",
                                      protect.error().message()));
    }
    if (s.memory_cap_mb) {
      // berth sets no memory limit on this node (no cgroup of its own): say so with the
      // step rather than let a cap look kept.
      r.notices.push_back(
          fmt::format("memory_cap_mb = {} is not enforced: the step ran on "
                      "this node, where berth sets no memory limit",
                      *s.memory_cap_mb));
    }
  } else {
    if (!o_.machine || !o_.launcher) {
      return failed(fmt::format("placed on '{}', but no launcher reaches other nodes", r.node));
    }
    // Read-only inputs are made on this node only (read_only.h): said once per run.
    if (!paths.inputs.empty() && !told_remote_.exchange(true)) {
      r.notices.push_back(fmt::format(
          "placed on '{}' through the launcher: steps on other nodes see their inputs "
          "writable, and a step that writes to one changes the original",
          r.node));
    }
    place::LaunchSpec ls;
    ls.tasks = s.tasks;
    ls.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
    ls.command = cmd->argv;
    ls.memory_cap = s.memory_cap_mb;
    ls.mpi = s.mpi;
    auto rendered = place::render(*o_.machine, *o_.launcher, p, ls);
    if (!rendered.ok()) {
      // Refused by the launcher (a wire-up it cannot give, a placement it cannot
      // honour): nothing of the step ran, and it says so rather than "failed".
      if (rendered.error().code() == Errc::kRefused) {
        StepResult refused = failed(rendered.error().message(), 0);
        refused.record.state = StepState::kRefused;
        return refused;
      }
      return failed(rendered.error().message());
    }
    app.argv = rendered->argv;
    // What the launcher will not do (an unenforced cap, no --mpi) goes with the step.
    for (const auto& note : rendered->notes) r.notices.push_back(note);
  }
  for (const auto& [k, v] : cmd->env)
    app.env.push_back({launch::EnvDirective::kSet, k, v, "", false});
  job.apps.push_back(app);
  // A step's tasks on this node are one MPI job on berth's own wire-up; through a
  // launcher, the launcher's wire-up serves them (place::render asks for it).
  job.mpi = here ? s.mpi : wireup::Mode::kNone;
  job.bind = bind_ranks ? launch::BindTo::kCore : launch::BindTo::kNone;
  job.node = o_.host;
  job.stdin_mode = launch::StdinMode::kNone;
  job.own_signals = false;
  job.cancel_fd = o_.cancel_fd;
  // Past its time limit the step's every process group gets SIGCONT, SIGTERM and, after
  // the grace period, SIGKILL; then every group once more with SIGKILL (job.h), so that
  // nothing it started outlives it.
  job.timeout = s.timeout;
  job.output = launch::OutputMode::kPlain;
  launch::OutputSinks sinks;
  sinks.out = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.append(line);
  };
  sinks.err = sinks.out;
  // Which GPUs its processes really held, where NVML can say (gpu_proof.h).
  std::string unchecked;
  auto proof = here ? gpu_proof_.begin(p, s.name, &unchecked) : nullptr;
  if (!unchecked.empty()) r.notices.push_back(std::move(unchecked));
  if (auto mig = GpuProof::mig_limit_notice(p)) r.notices.push_back(std::move(*mig));
  if (proof) job.on_started = [&proof](int, pid_t pgid) { proof->started(pgid); };
  auto outcome = launch::run_job(job, parent_, launch::Spawner::real(), sinks);
  if (proof) {
    for (std::string& n : proof->finish()) r.notices.push_back(std::move(n));
  }
  // Its processes are gone: the cores and GPUs go back to the pool now, and the next
  // step starts while this one is hashed and published (that work is berth's own).
  end_now();
  events.exited();
  if (!outcome.ok()) return failed(outcome.error().message());
  // Its output is kept, whatever became of the step: an object named in its record and
  // its row, which `berth log` prints (spec 04 §7.3). Losing it is a problem, not a
  // failure.
  if (auto name = cache_.objects().put_object(log); name.ok()) {
    r.log = *name;
  } else {
    d.problems.push_back(fmt::format("step '{}': its output was not kept: {}", s.name,
                                     name.error().message()));
  }
  // Each step's output reaches its sink once, whole, after the step.
  if (!log.empty() && o_.output) o_.output(s.name, log);
  if (outcome->timed_out) {
    // Nothing of it is stored: its outputs may be half written.
    r.timed_out = true;
    return failed(fmt::format("timed out after {}: its processes were ended (SIGTERM, then "
                              "SIGKILL); nothing of it is stored",
                              duration_text(*s.timeout)),
                  outcome->exit_code);
  }
  if (outcome->exit_code != 0) {
    std::string why = outcome->messages.empty() ? "failed" : outcome->messages[0];
    if (outcome->exit_code == 130) {
      r.state = StepState::kCancelled;
      r.reason = "cancelled";
      if (!log.empty()) r.log_tail = log_tail(log);
      cleanup();
      return d;
    }
    return failed(why, outcome->exit_code);
  }

  // Every file input it read still has the stamp its hash is of: otherwise its
  // outputs may come from bytes the key does not name, and are not stored. (A hard
  // link made for staging changed the ctime: that one is not compared.)
  for (size_t k = 0; k < files_in.size() && k < stamps.size(); ++k) {
    auto now = FileStamp::of(files_in[k].first->path);
    FileStamp want = stamps[k];
    if (now.ok() && files_in[k].second) now->ctime_ns = want.ctime_ns;
    if (!now.ok() || *now != want) {
      return failed(
          fmt::format("input {} changed while the step ran; its outputs are not "
                      "stored, and it runs again next time",
                      str::printable(files_in[k].first->text, 200)));
    }
  }

  // 3. Publish: every output as an object, then — only then — the row.
  json outputs = json::object();
  for (const std::string& out : s.outputs) {
    const std::string& path = paths.outputs[out];
    if (!files::exists(path)) {
      return failed(fmt::format("declared output '{}' was not written ({})", out, path));
    }
    if (s.canonical.count(out) && s.canonical.at(out) == kTreeForm) {
      // A directory output: its files handed over, then its manifest (store/tree.h).
      auto tree = store::put_tree(cache_.objects(), path);
      if (!tree.ok()) return failed(tree.error().with_context("output '" + out + "'").message());
      r.outputs[out] = {*tree, std::string(kTreeForm), *tree};
      outputs[out] = output_json(r.outputs[out]);
      continue;
    }
    if (std::error_code ec; fs::is_directory(path, ec)) {
      return failed(fmt::format("output '{}' is a directory: declare it as \"{}/\" to store "
                                "it as a tree",
                                out, out));
    }
    // The output is handed over: the store may make it the stored copy (no copy).
    auto object = cache_.objects().adopt_object_file(path);
    if (!object.ok()) return failed(object.error().message());
    auto canon = hash_output(path, s.canonical.count(out) ? s.canonical.at(out) : "bytes", *object, parent_);
    if (!canon.ok()) return failed(canon.error().with_context("output '" + out + "'").message());
    r.outputs[out] = {*object, canon->form, canon->hash};
    outputs[out] = output_json(r.outputs[out]);
  }
  // In a run without leases nobody else is expected to publish this key, so its
  // dependents need not wait for the row to be durable: they start now. A row that
  // then fails to be written costs the cache entry (a problem), not the step.
  bool announced = o_.announce_early && events.known;
  if (announced) events.known(r.outputs);
  ProvenanceContext who{o_.engine_version, o_.platform, o_.worker, o_.tools, started, ""};
  who.end = utc_text(clock().wall());
  json prov = step_provenance(s, r, p, std::move(prov_inputs), who);
  std::string mine = step_row_text(key, s.name, outputs, r.log, prov);
  auto put = put_step_row(cache_.rows(), store::row_address(kStepsRow, key), mine);
  if (!put.ok() && !announced) return failed(put.error().message());
  r.computed_by = computed_by(prov);
  if (!put.ok()) {
    // Its dependents have its outputs already, and its results are materialised
    // below: only the cache entry is lost.
    d.problems.push_back(
        fmt::format("step '{}': its row was not written: {}; it will be "
                    "recomputed next time",
                    s.name, put.error().message()));
  } else if (!put->created) {
    // Another computation of this key published first: the winner's row is in force.
    adopt_winner(put->existing, s.name, key, d);
  }
  if (cache_.index() && put.ok()) {
    cache_.index()->remember_step(key, put->created ? mine : put->existing);
  }
  d.row_ours = put.ok() && put->created;
  // Every object the row names is there now, or is stored again from the file still
  // in staging.
  if (d.row_ours) make_sure_of_objects(cache_.objects(), paths.outputs, s.name, d);
  auto m = cache_.materialize(r, &d.problems, o_.record_settled ? &d.results : nullptr);
  cleanup();
  // What it left beside its outputs was removed with the directory: said, by name.
  if (auto note = leftovers_notice(undeclared_files(left, s.outputs, staged_beside(s)))) {
    r.notices.push_back(std::move(*note));
  }
  if (!m.ok()) {
    if (announced) {
      d.problems.push_back(fmt::format("step '{}': {}", s.name, m.error().message()));
    } else {
      return failed(m.error().message());
    }
  }
  r.state = StepState::kExecuted;
  r.exit_code = 0;
  return d;
}

}  // namespace berth::pipeline
