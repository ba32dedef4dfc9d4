// Executor: runs a Graph inside an allocation, every result through the store
// (spec 04 §7).
//
// The run, step by step: a step is ready when every step it reads from has
// succeeded (or was cached). Its inputs are hashed (files under "bytes", upstream
// outputs under their canonical form) and its key computed (key.h). A step whose key
// has a row in the store, with every output object present and verified, is cached:
// its outputs are materialised and it does not run. Otherwise the pool grants it a
// placement disjoint from every running step; it runs in its own staging directory
// through launch (bound to its cores on this node, or through the machine's launcher
// for a placement elsewhere); its outputs are published as objects and its row
// written once. A failure skips its dependents; independent steps go on unless
// fail_fast. Nothing partial is published: a step's row is written only after every
// output is stored.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/spawn.h"
#include "pipeline/index.h"
#include "pipeline/graph.h"
#include "place/pool.h"
#include "place/render.h"
#include "store/object_store.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::pipeline {

enum class StepState { kPending, kCached, kExecuted, kFailed, kSkipped, kRefused, kCancelled };
const char* step_state_name(StepState s);  // "cached", "executed", ...

struct StepRecord {
  std::string name;
  StepState state = StepState::kPending;
  std::string key;
  std::string reason;       // dry run / failure / refusal: why
  std::string node;         // where it ran
  std::string cores;        // "0-1"
  double start_s = 0;       // seconds since the run began
  double end_s = 0;
  int exit_code = 0;
  // output -> {object, canonical form, canonical hash}
  struct Output {
    std::string object, form, canonical;
  };
  std::map<std::string, Output> outputs;
};

struct Divergence {
  std::string step, key, output, ours, theirs;
};

struct RunReport {
  std::string pipeline;
  std::string store;
  std::string started;  // ISO-8601 UTC
  double elapsed_s = 0;
  std::vector<StepRecord> steps;  // graph order
  std::vector<Divergence> divergences;
  std::vector<std::string> problems;  // corrupt objects found, and the like
  int count(StepState s) const;
  int exit_code() const;  // 0, or 1 when any step failed / was refused, 130 if cancelled
};

struct RunOptions {
  std::string results_dir;   // results/<step>/<output>
  std::string staging_dir;   // where each step's staging directory is made
  bool fail_fast = false;
  bool dry_run = false;
  std::string engine_version;
  std::string platform;
  std::string host;          // this node's name
  // Where a step placed on another node is launched: the machine and launcher that
  // render it. Absent: every step must be placed on this node.
  const topo::MachineDescription* machine = nullptr;
  const place::Launcher* launcher = nullptr;
  // Called with one line whenever a step starts or ends (progress).
  std::function<void(const RunReport&)> progress;
  // Readable when the run must stop (SIGINT): running steps are killed, nothing
  // partial is published, and the run reports what it did.
  int cancel_fd = -1;
  // This machine's disposable index (index.h): file stamp -> hash and key -> row, so a
  // no-op rerun stats its inputs instead of rehashing them. Absent: always hash.
  Index* index = nullptr;
};

// Runs `graph`. Fails before anything runs when a step can never fit in the pool
// (naming the step and the resource), or when a tool's version cannot be read.
Result<RunReport> run_graph(const Graph& graph, store::ObjectStore& store, place::Pool& pool,
                            const Env& parent, const RunOptions& options);

// The report as JSON (spec 04 §8) and the HTML timeline.
std::string report_json(const RunReport& r);
std::string report_html(const RunReport& r);

}  // namespace berth::pipeline
