// LaunchStepRunner: the real StepRunner (step_runner.h) — a step staged, launched
// through `launch` and published to the store (spec 04 §7, steps 3–5).
//
// Each step runs on a thread of its own:
//   1. an empty staging directory (staging.h), its file inputs linked in and its
//      upstream inputs materialised from the store;
//   2. its command rendered and launched — bound to its cores on this node as one job
//      (an MPI job on berth's wire-up, spec 07) that sees its inputs read-only
//      (read_only.h); the same job on another node, run there by that node's agent
//      (spec 08); or through the machine's launcher for any other placement elsewhere; its output collected and handed to `output` once, after
//      it ends; its placement freed as soon as its processes have ended;
//   3. every file input stamped again: one changed while it ran fails the step;
//   4. every output stored as an object (the store may adopt the file) and hashed in
//      its canonical form; then, and only then, the row; a row another computation of
//      the key published first is adopted, and a different canonical hash reported as a
//      divergence (spec 06);
//   5. its results materialised, its staging directory emptied for the next step.
// Nothing partial is published: a failure at any point stores no row. A step that
// failed after it ran has its staging directory kept instead, when asked
// (LaunchRunnerOptions::keep_failed, kept_failure.h).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "launch/agents.h"
#include "launch/job.h"
#include "launch/spawn.h"
#include "pipeline/gpu_proof.h"
#include "pipeline/graph.h"
#include "pipeline/key.h"
#include "pipeline/live_board.h"
#include "pipeline/staging.h"
#include "pipeline/step_cache.h"
#include "pipeline/step_runner.h"
#include "place/launcher.h"
#include "topo/machine.h"
#include "util/clock.h"
#include "util/env.h"

namespace berth::pipeline {

struct LaunchRunnerOptions {
  std::string host;  // this node's name: a step placed here runs as a local job
  const topo::MachineDescription* machine = nullptr;  // render a placement elsewhere
  const place::Launcher* launcher = nullptr;          // (absent: refuse one)
  std::string engine_version;                         // for provenance
  std::string platform;
  std::string worker;  // this worker's name ("" for an ordinary run)
  int cancel_fd = -1;  // readable: running jobs end (spec 03 §6)
  // Where a failed step's staging directory is kept, with what reproduces it
  // (kept_failure.h); "" (the default): emptied like any other.
  std::string keep_failed;
  const Clock* clock = nullptr;  // the run's clock (null: the real one)
  // A step's output (stdout and stderr together), once, after it ends.
  std::function<void(const std::string& step, std::string_view text)> output;
  // What starts a step's processes on this node (null: the real one); a test's fake
  // sees each request and may refuse it (fake_spawner_for_test.h).
  launch::Spawner* spawner = nullptr;
  // Where each step running here is shown while it runs, its output as it comes
  // (live_board.h); null: nowhere.
  LiveBoard* live = nullptr;
  // The run's agents on other nodes (agents.h, spec 08): a single-node step placed on
  // a node whose agent serves is run there by it, bound and wired up as a step here
  // is; null: every step elsewhere goes through the launcher.
  launch::Agents* agents = nullptr;
};

class LaunchStepRunner final : public StepRunner {
 public:
  // Steps of `g`, each staged in a directory of `staging` (staging.h), launched in an
  // environment made from `parent`.
  LaunchStepRunner(const Graph& g, Staging& staging, const Env& parent, LaunchRunnerOptions o)
      : g_(g), staging_(staging), parent_(parent), o_(std::move(o)) {}
  ~LaunchStepRunner() override { join(); }

  void begin(const RunStart& run) override;
  void start(StepTask task, Events events) override;
  void cancel() override {}  // every job watches o.cancel_fd itself
  void join() override;

 private:
  // One step through stages 1-5 above, on its own thread.
  StepResult execute(const StepTask& t, const Events& events);

  // The stages, in order, over one step's Attempt (launch_runner.cc). Each that returns
  // a bool or an optional stops the step with false or nullopt, its result (failed,
  // refused or cancelled) recorded in the attempt and its staging directory released.
  struct Attempt;
  bool stage_inputs(Attempt& a);   // 1: staged, its inputs linked or materialised
  bool stage_outputs(Attempt& a);  //    its output paths, and its command on them
  std::optional<launch::JobSpec> job_for(Attempt& a);  // 2: the job that runs it
  void bind_here(Attempt& a, launch::JobSpec& job, launch::AppSpec& app);
  bool through_launcher(Attempt& a, launch::AppSpec& app);
  std::optional<launch::JobOutcome> run_step(Attempt& a, launch::JobSpec job, const Events& events);
  // Whether the step runs through an agent: one node, whose agent serves.
  bool by_agent(const Attempt& a) const;
  void lost(Attempt& a);  // its node's agent was lost while it ran (spec 08 §5)
  bool succeeded(Attempt& a, const launch::JobOutcome& outcome);  // its output kept
  bool inputs_unchanged(Attempt& a);                              // 3
  bool store_outputs(Attempt& a);                                 // 4: objects, then
  bool publish(Attempt& a, const Events& events);                 //    the row
  void finish(Attempt& a);                                        // 5
  // Ends the step as failed with `why` and exit status `code`; false, always.
  bool fail(Attempt& a, std::string why, int code = 1);
  void end_now(Attempt& a);  // its end_s, once
  void cleanup(Attempt& a);  // its staging directory emptied, once
  void keep_failed(Attempt& a);  // a failed step's kept instead, when asked (kept_failure.h)
  void reap_finished();
  double now_s() const;
  const Clock& clock() const { return o_.clock != nullptr ? *o_.clock : Clock::real(); }

  const Graph& g_;
  Staging& staging_;
  // From begin(): where results go; the tools' versions; the run's start; whether a
  // step's dependents may start once its outputs are stored, before its row is durable
  // (a run without leases: nobody else publishes the key); whether results are stamped.
  StepCache* cache_ = nullptr;
  const ToolVersions* tools_ = nullptr;
  std::chrono::steady_clock::time_point t0_{};
  bool announce_early_ = true;
  bool record_settled_ = false;
  const Env& parent_;
  LaunchRunnerOptions o_;
  std::mutex mu_;
  std::map<size_t, std::thread> threads_;      // by step
  std::vector<size_t> finished_;               // steps whose thread has returned
  std::atomic<bool> told_unprotected_{false};  // inputs could not be made read-only: said
  std::atomic<bool> told_remote_{false};       // ...nor on another node: said
  GpuProof gpu_proof_{parent_};                // which GPUs each step used (gpu_proof.h)
};

}  // namespace berth::pipeline
