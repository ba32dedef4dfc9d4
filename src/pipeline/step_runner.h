// StepRunner: the seam through which the executor runs a step (spec 04 §7).
//
// The executor decides what runs when — keys, cache hits, grants, leases, failures,
// cancellation — and hands each step it starts to a StepRunner, which runs it on its
// placement and says, from any thread, when its processes have ended and what became of
// it. The real runner (launch_runner.h) stages the inputs, launches through `launch`
// and publishes to the store; a fake one (fake_runner_for_test.h) decides each outcome by
// hand, so that every scheduling behaviour is tested with no process and no sleep, as
// ninja tests its Builder with a FakeCommandRunner.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/index.h"
#include "pipeline/key.h"
#include "pipeline/report.h"
#include "pipeline/settled.h"
#include "place/placement.h"

namespace berth::pipeline {

// The stamps of a step's results once they are in place, for a settled record
// (settled.h), and whether every one could be stamped.
struct ResultStamps {
  std::vector<SettledFile> files;
  bool whole = true;
};

// A step to run: everything the runner reads, copied, since the executor's own state
// changes while the step runs.
struct StepTask {
  size_t step = 0;             // index in the graph
  const Step* spec = nullptr;  // the expanded step; lives as long as the run
  std::string key;
  place::Placement placement;
  uint64_t grant = 0;  // the pool's grant, released once the processes end
  StepRecord record;   // so far: name, key, node, cores, start_s, reason, basis
  // In input order: the record of each input item that is another step's output, as
  // it stood when the step started; and each file input item's stamp when its hash was
  // taken (a change since means the key is not of what the step read).
  std::vector<StepRecord::Output> upstream;
  std::vector<FileStamp> stamps;
};

// What became of a step.
struct StepResult {
  size_t step = 0;
  StepRecord record;  // its state: executed, failed, refused or cancelled
  ResultStamps results;
  bool row_ours = false;  // the row in force is the one this step wrote
  // The node whose agent was lost while it ran the step (spec 08 §5): the step's
  // failure is not its own, and it runs again elsewhere. "" otherwise.
  std::string lost_node;
  std::vector<Divergence> divergences;
  std::vector<std::string> problems;
};

class StepCache;

// What only the run knows once it begins, handed to the runner before its first step:
// the cache results are stored and looked up through, the tools' versions (provenance),
// when the run began (a step's start_s and end_s count from it), whether workers claim
// keys (then a step's dependents wait for its row), and whether results are stamped for
// a settled record.
struct RunStart {
  StepCache* cache = nullptr;
  const ToolVersions* tools = nullptr;
  std::chrono::steady_clock::time_point t0{};
  bool leases = false;
  bool record_settled = false;
};

class StepRunner {
 public:
  // What a running step tells the executor; each may be called from any thread, each
  // at most once per step, `done` last.
  struct Events {
    // The step's processes have ended: its placement may go to another step.
    std::function<void()> exited;
    // Its outputs are stored (a run without leases, before the row is written): its
    // dependents may start. Optional: a runner may go straight to `done`.
    std::function<void(const std::map<std::string, StepRecord::Output>&)> known;
    std::function<void(StepResult)> done;
  };

  virtual ~StepRunner() = default;
  // The run begins: called once, before the first start().
  virtual void begin(const RunStart&) {}
  // Starts the step; returns at once.
  virtual void start(StepTask task, Events events) = 0;
  // The run is cancelled: every running step ends as cancelled, nothing of it stored.
  virtual void cancel() = 0;
  // Waits until every step started has called `done` and its thread is gone.
  virtual void join() = 0;
};

}  // namespace berth::pipeline
