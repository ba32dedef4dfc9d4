// Executor: runs a Graph inside an allocation, every result through the store
// (spec 04 §7).
//
// The run, step by step: a step is ready when every step it reads from has
// succeeded (or was cached). Its inputs are hashed (files under "bytes", upstream
// outputs under their canonical form) and its key computed (key.h). A step whose key
// has a row in the store, with every output object present and verified, is cached:
// its outputs are materialised and it does not run (step_cache.h). A step whose key
// another step of this run is already computing waits for it and takes its result.
// Otherwise the pool grants it a placement disjoint from every running step and a
// StepRunner it is handed runs it (step_runner.h; the real one stages, launches and
// publishes, launch_runner.h). A failure skips its dependents; independent steps go on unless
// fail_fast. Nothing partial is published: a step's row is written only after every
// output is stored.
//
// run_graph() is the scheduler alone: it never prints and never reads the time but
// through RunOptions::clock, so that executor_test.cc drives every behaviour with a
// fake runner and a fake clock.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/lease.h"
#include "pipeline/report.h"
#include "pipeline/settled.h"
#include "pipeline/step_runner.h"
#include "pipeline/record_reuse.h"
#include "place/pool.h"
#include "place/launcher.h"
#include "place/render.h"
#include "store/object_store.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::pipeline {

struct RunOptions {
  std::string results_dir;   // results/<step>/<output>
  bool fail_fast = false;
  bool dry_run = false;
  // At most this many steps run at once (`berth run -j N`); 0: as many as the pool
  // grants. A step holding a grant counts, whatever it was granted.
  int jobs = 0;
  std::string host;          // this node's name
  // Called whenever a step starts or ends (progress), with the counts so far.
  std::function<void(const Progress&)> progress;
  // Readable when the run must stop (SIGINT): running steps are killed, nothing
  // partial is published, and the run reports what it did.
  int cancel_fd = -1;
  // This machine's disposable index (index.h): file stamp -> hash and key -> row, so a
  // no-op rerun stats its inputs instead of rehashing them. Absent: always hash.
  Index* index = nullptr;
  // Worker mode (spec 06): claims on step keys, over the shared store. A step whose
  // key another worker holds is deferred; when nothing else is ready or running here
  // the run waits — between scopes, no thread blocked — backing off from backoff_min to
  // backoff_max, then re-arms the deferred steps. Absent: no leases (an ordinary run).
  Leases* leases = nullptr;
  std::chrono::milliseconds backoff_min{1000};
  std::chrono::milliseconds backoff_max{30000};
  // A step with `retries` that failed starts again after retry_min, doubling per
  // attempt up to retry_max (spec 04 §7 step 5).
  std::chrono::milliseconds retry_min{1000};
  std::chrono::milliseconds retry_max{60000};
  // The store every worker sees, for step-row reads and writes (TieredStore::shared());
  // null: `store` itself.
  store::ObjectStore* shared = nullptr;
  std::string worker;  // this worker's name, for provenance and the report
  // Step name -> StepRecord::basis from the previous run, so a dry run can say
  // "input changed" rather than "new".
  std::map<std::string, std::string> previous;
  // Where `previous` comes from when it is empty: called at most once, and only when a
  // step must run or a dry run explains one — a no-op rerun never reads the last
  // report.
  std::function<std::map<std::string, std::string>()> load_previous;
  // A quick look-up of one step's previous basis (find_step_basis over the previous
  // report), tried for the first few steps that must run, before load_previous parses
  // the whole report: most reruns after an edit run a few steps of many. nullopt sends
  // the step to load_previous.
  std::function<std::optional<std::string>(const std::string& step)> find_previous;
  // Collect what a run in which every step is cached or executed saw, into
  // RunReport::settled. Needs the index: the record holds the stamps the index knows
  // hashes at.
  bool record_settled = false;
  // Reuse from the last settled run (spec 04 §7.1): a ready step whose entry in the
  // record rests only on facts that still hold, and every step it reads from reused
  // too, is finished from that entry — cached, not keyed, looked up, materialised or
  // run — and its entry goes into the report verbatim (StepRecord::recorded).
  std::optional<SettledReuse> reuse;

  // What runs each step (step_runner.h): handed in, as the session builds the real one
  // (launch_runner.h) and a test a fake (fake_runner_for_test.h); needed unless dry_run.
  StepRunner* runner = nullptr;
  // The seams (null: the real thing). The clock every time of the run is read from;
  // how run() waits for its descriptors or a deadline (poll(2); a test with a
  // FakeClock advances it instead of sleeping); what runs tool version commands.
  const Clock* clock = nullptr;
  std::function<int(pollfd* fds, nfds_t n, int timeout_ms)> wait;
  place::VersionProbe* probe = nullptr;
};


// Runs `graph`. A step that can never fit in the pool is refused (naming the resource)
// and what reads from it skipped; every other step runs (fit_check.h). Fails before
// anything runs when a tool's version cannot be read.
Result<RunReport> run_graph(const Graph& graph, store::ObjectStore& store, place::Pool& pool,
                            const Env& parent, const RunOptions& options);

}  // namespace berth::pipeline
