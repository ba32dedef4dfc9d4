// Executor: the scheduler's state for one run (run_graph(), executor.h) — what is
// ready, keyed, cached, queued, running, deferred to another worker or waiting to retry,
// and the report being made — with each member function one decision of the loop
// executor.cc runs. Private to executor.cc: the interface is run_graph().
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "pipeline/executor.h"
#include "pipeline/explain.h"
#include "pipeline/in_flight.h"
#include "pipeline/probe.h"
#include "pipeline/record_reuse.h"
#include "pipeline/run_claims.h"
#include "pipeline/runner_mailbox.h"
#include "pipeline/settled_build.h"
#include "pipeline/step_cache.h"
#include "util/flat_index.h"
#include "util/sha256.h"

namespace berth::pipeline::scheduler {

using SteadyTime = std::chrono::steady_clock::time_point;
// What a queued step waits for a grant of: tasks, cpus per task, gpus, nodes (-1: any).
using Shape = std::tuple<int, int, int, int>;
// A step's shape: what it waits for a grant of.
Shape shape_of(const Step& s);

class Executor {
 public:
  Executor(const Graph& g, store::ObjectStore& s, place::Pool& p, const Env& parent,
           const RunOptions& o)
      : g_(g),
        store_(s),
        pool_(p),
        parent_(parent),
        o_(o),
        clock_(o.clock != nullptr ? *o.clock : Clock::real()),
        cache_(s, o.shared != nullptr ? *o.shared : s, o.index, o.results_dir),
        explainer_(PreviousBases{o.previous, o.find_previous, o.load_previous}) {}

  Result<RunReport> run();

 private:
  Result<void> read_tool_versions();
  Result<void> check_fits();
  // The step's key from its inputs' hashes, and what it was computed from (basis,
  // StepRecord::basis); fails for an unreadable input.
  Result<std::string> key_for(size_t i, std::string* basis);
  // A cached result (StepCache::lookup), what it saw kept for a settled record.
  std::optional<StepRecord> try_cached(size_t i);
  // Finishes step i from the settled record's entry when RunOptions::reuse allows.
  bool try_reuse(size_t i);
  // Step i's outputs, read from its recorded entry if it was reused; false when that
  // entry does not say.
  bool ensure_outputs(size_t i);
  // Keys a ready step, then: cached → finished; the same key as a step of this run
  // already queued or running → waits for it; dry run → would-run; otherwise queued
  // for a placement.
  void prepare(size_t i);
  // Starts queued steps while the pool grants them.
  void grant_queued();
  // Worker mode: claims step i's key. False when another worker holds it (deferred).
  bool claim(size_t i);
  // Hands step i to the runner on its grant.
  void start(size_t i, place::Grant grant);
  // A step ended: record it, count it, and release or ready what depends on it.
  void finish_step(size_t i, StepRecord rec);
  // Step i, which computed a key other steps of this run wait for, ended as `st`: they
  // take its result (executed or cached), or are readied to run for themselves.
  void finish_twins(size_t i, StepState st);
  void skip_dependents(size_t i, const std::string& why);
  void set_state(size_t i, StepState st);
  // Step i failed with attempts left (its `retries`): it starts again after a backoff,
  // still keyed and still holding its lease. False when it has none left.
  bool retry_later(StepResult& d);
  // Step i was lost with its node's agent (spec 08 §5): the node leaves the pool and
  // the step goes back to the queue at once, to be placed elsewhere. False when the
  // run is stopping, or it was not lost so (executor_lost.cc).
  bool requeue_lost(StepResult& d);
  // Retries whose backoff is over go back to the queue; with the run stopping, each
  // ends as its last attempt did.
  void requeue_retries();
  void notify();
  // run()'s stages: the tables sized and everything checked before a step runs; the
  // loop that keys, queues, grants and waits until nothing is left; the report.
  Result<void> begin();
  void schedule();
  RunReport end();
  // The loop's parts: the index committed every second or so; what can never fit
  // refused (true when any was); the last re-arm judged, the next made when due; a
  // wait for a runner's news, the cancel descriptor or the next deadline; the news.
  void commit_now_and_then();
  bool refuse_what_never_fits();
  void judge_rearm();
  void rearm_when_due();
  void wait_for_news();
  void take_mail();
  // A step the runner finished: retried, or recorded and counted.
  void step_done(StepResult& d);
  // record_settled: moves what the steps saw into report_.settled, when every step was
  // cached or executed and nothing went wrong.
  void collect_settled();
  void summarise_notices();
  // The probe RunOptions gives, or one over the steps' environment.
  place::VersionProbe& probe() {
    if (o_.probe != nullptr) return *o_.probe;
    if (!own_probe_) own_probe_.emplace(parent_);
    return *own_probe_;
  }
  store::ObjectStore& rows() { return o_.shared ? *o_.shared : store_; }
  double now_s() const { return std::chrono::duration<double>(clock_.steady() - t0_).count(); }

  const Graph& g_;
  store::ObjectStore& store_;
  place::Pool& pool_;
  const Env& parent_;
  const RunOptions& o_;
  const Clock& clock_;
  StepCache cache_;
  Explainer explainer_;
  std::optional<CaptureProbe> own_probe_;
  StepRunner* runner_ = nullptr;
  ToolVersions tools_;
  SteadyTime t0_;
  RunReport report_;

  // Scheduling: every structure here is touched by the run() thread only.
  std::vector<int> waiting_;                     // unfinished deps per step
  std::vector<std::vector<size_t>> dependents_;  // steps that read each step
  std::deque<size_t> ready_;                     // deps done, not yet keyed
  std::map<Shape, std::deque<size_t>> queued_;   // keyed, not cached: waiting for a grant
  size_t queued_count_ = 0;
  std::vector<size_t> deferred_;  // claimed by another worker
  std::vector<int> attempts_;     // times each step was started
  // Steps waiting to start again after a failed attempt: when, and the attempt's record.
  struct Retry {
    SteadyTime at;
    size_t step;
    StepRecord last;
  };
  std::vector<Retry> retrying_;
  // Each step's key as the 32 bytes its 64 hex digits spell, flat: step i's at
  // [32 i, 32 i + 32) of one buffer (10^6 steps: 32 MB, not 10^6 strings); keyed_[i]
  // once it is keyed. The report holds each key as text too.
  static constexpr size_t kDigestBytes = 32;
  std::string digests_;
  std::vector<char> keyed_;
  // Step i's key's bytes ("" until keyed): what equal keys are found by.
  std::string_view digest(size_t i) const {
    return keyed_[i] ? std::string_view(digests_).substr(kDigestBytes * i, kDigestBytes)
                     : std::string_view();
  }
  // Step i's key, 64 hex digits ("" until keyed).
  std::string key(size_t i) const {
    return keyed_[i] ? to_hex(digests_.data() + kDigestBytes * i, kDigestBytes) : std::string();
  }
  RunClaims claims_{o_.leases, clock_, report_.leases, g_.steps.size()};
  size_t twins_waiting_ = 0;  // steps waiting for an equal key's result
  // Equal keys: the step computing each key in this run, and the steps waiting on it.
  // By digest(i), which stays as it is while step i is here: a flat index of steps,
  // not a map of 10^6 copies of their keys.
  struct KeyOf {
    const Executor* e;
    std::string_view operator()(size_t i) const { return e->digest(i); }
  };
  FlatIndex<KeyOf> primaries_{KeyOf{this}};
  std::map<size_t, std::vector<size_t>> twins_;
  InFlight in_flight_;  // steps started, and those whose processes still run
  bool stop_new_ = false;
  bool cancelled_ = false;
  std::map<StepState, int> counts_;
  double executed_seconds_ = 0;

  // What the runner's threads tell run(); dependents already readied by a step's
  // `known` (its outputs stored before its row).
  RunnerMailbox mailbox_;
  std::vector<char> released_early_;
  // Re-arming the steps another worker holds: when next, after what backoff, and
  // whether the last re-arm's effect (fewer deferred than before) has been judged.
  SteadyTime next_rearm_ = SteadyTime::max();
  std::chrono::milliseconds backoff_{0};
  size_t deferred_before_rearm_ = 0;
  bool judged_ = true;
  SteadyTime last_commit_{};  // of the index's batched writes
  // What the steps saw (record_settled; run() thread only), per step: the files and
  // objects its cached or executed outcome rests on. settleable_ goes false at the
  // first fact that was not verified at a stamp.
  std::vector<SettledFacts> facts_;
  bool settleable_ = true;
  RecordReuse reuse_{o_.reuse ? &*o_.reuse : nullptr, g_, o_.reuse || o_.record_settled};
  // Per step, the stamp of each file input item at which key_for() knew its hash, in
  // input order (run() thread; moved into the step's task when it starts).
  std::vector<std::vector<FileStamp>> input_stamps_;
};

}  // namespace berth::pipeline::scheduler
