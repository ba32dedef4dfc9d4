// Session: one `berth run` of a pipeline, everything between parsed flags and printed
// output (spec 04 §7, §8; spec 06).
//
// A session opens what a run needs and runs it:
//   1. the pipeline file — expanded and checked before anything runs, unless the last
//      run of these very bytes settled (settled.h), when parsing waits until the
//      record turns out not to hold;
//   2. worker mode, refused before anything runs when it could not divide anything;
//   3. the pool over the allocation's nodes (a worker's: its own node only), every node
//      of which the launcher must reach (spec 02 §7);
//   4. the cache directory — this machine's index, staging area and a worker's local
//      object tier, one per worker unless --cache names one (then guarded by a lock);
//   5. the store, and for a worker its local tier in front of the shared store;
//   6. the settled record: when it still holds, the run is that run again, reported
//      from the record, not re-derived;
//   7. otherwise the ordinary run (executor.h), with the cancel descriptor ending
//      running steps cleanly;
//   8. the report, stored with the run and kept beside the pipeline; a run that
//      settled leaves its record for the next.
// The session never prints: what a user should see on the way (the store's notices,
// an index rebuilt, a report that could not be stored) goes to `say`, a step's output
// to `step_output`, and the outcome is a value the CLI (or Python) presents.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/agents.h"
#include "pipeline/config.h"
#include "pipeline/executor.h"
#include "pipeline/live_board.h"
#include "pipeline/report.h"
#include "pipeline/report_file.h"
#include "pipeline/run_outcome.h"
#include "place/launcher.h"
#include "place/pool.h"
#include "topo/machine.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::pipeline {

struct SessionOptions {
  std::string pipeline;  // the pipeline file, as given
  // Steps to run (names or shell-style patterns of expanded steps) with everything
  // they need, nothing else (targets.h); empty: every step. A run with targets neither
  // uses nor leaves a settled record, which is of the whole pipeline.
  std::vector<std::string> targets;
  // --config / --configfile (config.h). A run given any neither uses nor leaves a
  // settled record, which is of the file as written.
  ConfigOverrides config;
  std::string store;     // a store URL; "" = file://<dir>/.berth/store
  std::string results;   // the results directory; "" = <dir>/results
  std::string cache;     // the cache directory; "" = <dir>/.berth/cache (a worker's own)
  bool dry_run = false;
  // A dry run renders each would-run step's command into its report (dry_run.h).
  bool dry_run_commands = false;
  bool fail_fast = false;
  // A failed step's staging directory kept in the pipeline's own directory, under
  // failed/<step>/, with what reproduces it (kept_failure.h); else emptied.
  bool keep_failed = false;
  int jobs = 0;  // at most this many steps at once (-j); 0: as many as the pool grants
  std::optional<std::string> worker;  // worker mode; "" = a generated name
  std::string lease = "10m";          // how long a worker's claim holds (spec 06)
  std::string store_patience = "3m";  // how long an outage of the store is waited out (spec 05 §9)
  std::string engine_version;         // "berth 0.1.0 (commit …)": provenance, settled context
  // The process ends right after this session (berth run): its parsed pipeline file,
  // graph, settled record and check are left to the operating system when it is
  // destroyed, not freed one allocation at a time (milliseconds for 10,000 steps).
  // Everything else — the index, the store, a cache lock — is closed as always.
  bool process_exits = false;
  // The run's clock, for the session and everything it runs (null: the real one).
  const Clock* clock = nullptr;
  // Where the steps running here are shown to other processes (live_board.h); null:
  // nowhere. The caller keeps it, and feeds it the run's progress.
  LiveBoard* live = nullptr;
};

// Where the run happens: what the CLI's context (or Python's) discovered.
struct SessionPlace {
  std::vector<place::PoolNode> nodes;  // the allocation's, this node's description
  std::string host;                    // this node's name ("" when not in the allocation)
  const topo::MachineDescription* machine = nullptr;
  const place::Launcher* launcher = nullptr;
  place::VersionProbe* probe = nullptr;  // runs tool version commands (null: the real one)
  // Runs each step (null: the real runner, launching through `launch`); a test hands a
  // fake (fake_runner_for_test.h).
  StepRunner* runner = nullptr;
  // The store every result goes to (null: the one SessionOptions::store names, waited
  // out through outages); a test hands one of its own, used as it is.
  store::ObjectStore* store = nullptr;
  // The run's agents on other nodes (spec 08): a node one serves is reached through it.
  launch::Agents* agents = nullptr;
  // Called once, when steps are about to be placed — never for a run its settled record
  // answers, nor a dry run: starts the agents, and sets `nodes` again as they describe
  // themselves and `agents` to what reaches them. Until then no node is refused for
  // want of a launcher: an agent may reach it.
  std::function<Result<void>(SessionPlace&)> for_steps;
};

struct SessionSinks {
  // One message for the user, without "berth: " (the CLI adds it).
  std::function<void(std::string_view)> say;
  std::function<void(const Progress&)> progress;
  std::function<void(const std::string& step, std::string_view text)> step_output;
};

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Steps 1–5 above. Fails on a pipeline that does not parse or expand, a worker that
  // could not divide anything, a node nothing reaches, a store or cache that cannot be
  // opened — each error naming what was wrong.
  static Result<std::unique_ptr<Session>> open(SessionOptions options, SessionPlace place,
                                               const Env& env, SessionSinks sinks);

  // Steps 6–8. `cancel_fd`, when readable, ends the run's running steps (SIGINT).
  Result<RunOutcome> run(int cancel_fd);

 private:
  struct State;
  explicit Session(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};


}  // namespace berth::pipeline
