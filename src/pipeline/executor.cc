// The executor (spec 04 §7): the scheduler of a run — which steps are ready, keyed,
// cached, queued, granted, deferred to another worker, skipped or refused — with the
// running of each step behind the StepRunner seam (step_runner.h).
#include "pipeline/executor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "pipeline/command.h"
#include "pipeline/executor_state.h"
#include "pipeline/fit_check.h"
#include "pipeline/key.h"
#include "pipeline/no_core.h"
#include "pipeline/step_key.h"
#include "util/files.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace scheduler {

Shape shape_of(const Step& s) {
  SettledRequest q = settled_request(s);  // no-core steps (0 cores) in a queue of their own
  return {q.tasks, needs_no_core(s) ? 0 : q.cpus_per_task, q.gpus, q.nodes};
}

Result<void> Executor::read_tool_versions() {
  for (const auto& [name, tool] : g_.tools) {
    auto out = probe().run(tool.version);
    if (!out.ok()) {
      return out.error().with_context(fmt::format("{}: tool '{}': version command", g_.path, name));
    }
    tools_[name] = *out;
  }
  return Ok{};
}

Result<void> Executor::check_fits() {
  // A step that can never fit is refused, what reads from it skipped; the rest runs.
  for (NeverFits& no : never_fitting(g_, pool_.nodes())) {
    StepRecord r = report_.steps[no.step];
    r.state = StepState::kRefused;
    r.reason = std::move(no.reason);
    finish_step(no.step, std::move(r));
  }
  return Ok{};
}

Result<std::string> Executor::key_for(size_t i, std::string* basis) {
  KeyInputs in{&g_, &report_.steps, &tools_, o_.index, &clock_, basis != nullptr,
               o_.record_settled};
  BERTH_TRY(StepKey k, step_key(i, in));
  if (o_.record_settled) {
    for (auto& f : k.files) facts_[i].files.push_back(std::move(f));
    if (!k.all_stamped) settleable_ = false;
  }
  if (basis) *basis = std::move(k.basis);
  input_stamps_[i] = std::move(k.stamps);
  return std::move(k.key);
}

std::optional<StepRecord> Executor::try_cached(size_t i) {
  StepCache::Seen seen;
  // The record holds the key as a string already (prepare() keyed it).
  auto r = cache_.lookup(g_.steps[i], report_.steps[i].key, !o_.dry_run, report_.problems,
                         o_.record_settled ? &seen : nullptr);
  if (r && o_.record_settled) {
    for (auto& o : seen.objects) facts_[i].objects.push_back(std::move(o));
    for (auto& f : seen.results.files) facts_[i].files.push_back(std::move(f));
    if (!seen.results.whole) settleable_ = false;
  }
  return r;
}

bool Executor::try_reuse(size_t i) {
  auto entry = reuse_.entry_for(i, tools_);
  if (!entry) return false;
  StepRecord r;
  r.name = g_.steps[i].name;
  r.state = StepState::kCached;
  r.reason = std::string(kCachedReason);
  r.recorded = *entry;
  finish_step(i, std::move(r));
  return true;
}

bool Executor::ensure_outputs(size_t i) {
  StepRecord& rec = report_.steps[i];
  if (rec.recorded.empty() || !rec.outputs.empty()) return true;
  auto outputs = recorded_outputs(rec.recorded, g_.steps[i].outputs);
  if (!outputs) return false;
  rec.outputs = std::move(*outputs);
  return true;
}

void Executor::set_state(size_t i, StepState st) {
  StepState& cur = report_.steps[i].state;
  if (cur != StepState::kPending) --counts_[cur];
  cur = st;
  if (st != StepState::kPending) ++counts_[st];
}

void Executor::notify() {
  if (!o_.progress) return;
  Progress p;
  p.total = g_.steps.size();
  for (const auto& [st, n] : counts_) p.done += static_cast<size_t>(n);
  p.running = in_flight_.running();  // processes, not steps being published
  p.deferred = deferred_.size();
  p.executed = counts_[StepState::kExecuted];
  p.cached = counts_[StepState::kCached];
  p.failed = counts_[StepState::kFailed];
  p.skipped = counts_[StepState::kSkipped];
  p.elapsed_s = now_s();
  if (p.executed > 0) {
    // Only steps that will run here count: not those done, and not those that will be
    // cached without running — waiting for an equal key computed in this run, or
    // claimed by another worker that will publish them.
    double mean = executed_seconds_ / p.executed;
    size_t not_run = p.done + twins_waiting_ + deferred_.size();
    double left = static_cast<double>(p.total > not_run ? p.total - not_run : 0);
    p.eta_s = mean * left / static_cast<double>(std::max<size_t>(1, in_flight_.most()));
  }
  o_.progress(p);
}

void Executor::skip_dependents(size_t i, const std::string& why) {
  std::vector<size_t> stack(dependents_[i].begin(), dependents_[i].end());
  while (!stack.empty()) {
    size_t j = stack.back();
    stack.pop_back();
    if (report_.steps[j].state != StepState::kPending || in_flight_.started(j)) continue;
    set_state(j, StepState::kSkipped);
    report_.steps[j].reason = why;
    for (size_t k : dependents_[j]) stack.push_back(k);
  }
}

void Executor::finish_step(size_t i, StepRecord rec) {
  StepState st = rec.state;
  rec.state = report_.steps[i].state;
  report_.steps[i] = std::move(rec);
  set_state(i, st);
  finish_twins(i, st);
  if (st == StepState::kExecuted)
    executed_seconds_ += report_.steps[i].end_s - report_.steps[i].start_s;
  if (st == StepState::kExecuted || st == StepState::kCached) {
    if (released_early_[i]) return;
    for (size_t j : dependents_[i]) {
      if (--waiting_[j] == 0 && report_.steps[j].state == StepState::kPending) ready_.push_back(j);
    }
    return;
  }
  const char* what = st == StepState::kRefused     ? "was refused"
                     : st == StepState::kCancelled ? "was interrupted"
                                                   : "failed";
  skip_dependents(i, fmt::format("not run: '{}' {}", report_.steps[i].name, what));
  if (st == StepState::kFailed && o_.fail_fast) stop_new_ = true;
}

void Executor::prepare(size_t i) {
  StepRecord& rec = report_.steps[i];
  if (rec.state != StepState::kPending) return;
  if (o_.reuse && !keyed_[i] && try_reuse(i)) return;
  if (g_.steps[i].from_record) {
    // Known only by its entry, whose facts all held when the graph was made: nothing
    // to key or run it with. Said, never run as an empty step.
    StepRecord r = rec;
    r.state = StepState::kFailed;
    r.reason =
        "its entry in the settled record could not be reused although every fact it rests "
        "on held; run again (the record is rewritten)";
    settleable_ = false;
    finish_step(i, std::move(r));
    return;
  }
  if (!keyed_[i]) {
    // A step it reads from may have been reused: its outputs come from its entry.
    for (size_t dep : g_.steps[i].deps) {
      if (ensure_outputs(dep)) continue;
      StepRecord r = rec;
      r.state = StepState::kFailed;
      r.reason = fmt::format(
          "the settled record's entry of '{}', which it reads from, does not say its "
          "outputs; run again (the record is rewritten)",
          g_.steps[dep].name);
      settleable_ = false;
      finish_step(i, std::move(r));
      return;
    }
  }
  if (!keyed_[i] || rec.basis.empty()) {
    std::string basis;
    auto key = key_for(i, &basis);
    if (!key.ok()) {
      StepRecord r = rec;
      r.state = StepState::kFailed;
      r.reason = key.error().message();
      finish_step(i, std::move(r));
      return;
    }
    char bytes[kDigestBytes];
    if (!from_hex(*key, bytes, kDigestBytes)) {
      StepRecord r = rec;
      r.state = StepState::kFailed;
      r.reason = fmt::format("internal error: a key that is not {} hex digits: {}",
                             2 * kDigestBytes, *key);
      finish_step(i, std::move(r));
      return;
    }
    if (keyed_[i]) primaries_.erase(i);  // indexed by its old key, if at all
    digests_.replace(kDigestBytes * i, kDigestBytes, bytes, kDigestBytes);
    keyed_[i] = 1;
    rec.key = std::move(*key);
    rec.basis = std::move(basis);
  }
  if (auto cached = try_cached(i)) {
    cached->basis = std::move(rec.basis);
    finish_step(i, std::move(*cached));
    return;
  }
  // Steps of one run with equal keys are one computation (spec 04 §7): the first is
  // run, the others wait for it and take its result.
  auto primary = primaries_.find(digest(i));
  if (primary && *primary != i) {
    const std::string& first = g_.steps[*primary].name;
    twins_[*primary].push_back(i);
    if (o_.dry_run) set_state(i, StepState::kWouldRun);
    twins_waiting_ += o_.dry_run ? 0 : 1;
    rec.reason = o_.dry_run ? fmt::format("the same key as '{}', computed once", first)
                            : fmt::format("waits for '{}', which has the same key", first);
    return;
  }
  if (!primary) primaries_.insert(i);
  if (o_.dry_run) {
    // Dependents stay pending: their inputs are not known until this runs.
    set_state(i, StepState::kWouldRun);
    rec.reason = explainer_.why(g_.steps[i].name, rec.basis);
    return;
  }
  rec.reason = explainer_.why(g_.steps[i].name, rec.basis);
  queued_[shape_of(g_.steps[i])].push_back(i);
  ++queued_count_;
}

bool Executor::claim(size_t i) {
  StepRecord& rec = report_.steps[i];
  RunClaims::Claim c = claims_.claim(i, key(i));
  if (!c.problem.empty()) {
    report_.problems.push_back(fmt::format("step '{}': {}", rec.name, c.problem));
  }
  if (c.run) return true;
  rec.reason = fmt::format("claimed by worker '{}'", c.holder);
  deferred_.push_back(i);
  return false;
}

void Executor::grant_queued() {
  for (auto& [shape, queue] : queued_) {
    while (!queue.empty() && !stop_new_ && !cancelled_ &&
           (o_.jobs <= 0 || in_flight_.in_flight() < static_cast<size_t>(o_.jobs))) {
      size_t i = queue.front();
      auto grant = grant_for(pool_, g_.steps[i]);
      if (grant.ok() && !grant->has_value()) break;  // this shape waits for a release
      queue.pop_front();
      --queued_count_;
      if (!grant.ok()) {
        StepRecord r = report_.steps[i];
        r.state = StepState::kRefused;
        r.reason = grant.error().message();
        finish_step(i, std::move(r));
        continue;
      }
      // Claim the key only now, with a placement in hand: a worker claims what it is
      // about to run, never its whole queue.
      if (o_.leases && !claim(i)) {
        pool_.release((*grant)->id);
        continue;
      }
      start(i, std::move(**grant));
    }
  }
}

void Executor::start(size_t i, place::Grant grant) {
  in_flight_.start(i);
  StepRecord& rec = report_.steps[i];
  rec.key = key(i);
  // Every node the step runs on, not only the first (a two-node MPI step is on both).
  const place::Placement& p = grant.placement;
  rec.node = p.nodes.empty() ? o_.host : str::join(p.nodes, ",");
  rec.cores = idset::encode_ids(p.cores.empty() ? std::vector<int>{} : p.cores[0]);
  rec.start_s = now_s();
  rec.attempts = ++attempts_[i];
  StepTask t;
  t.step = i;
  t.spec = &g_.steps[i];
  t.key = key(i);
  t.grant = grant.id;
  t.placement = std::move(grant.placement);
  t.record = rec;
  for (const auto& [name, input] : g_.steps[i].inputs) {
    for (const InputItem& item : input.items) {
      if (item.kind == InputItem::Kind::kFile) continue;
      t.upstream.push_back(report_.steps[item.step].outputs.at(item.output));
    }
  }
  t.stamps = std::move(input_stamps_[i]);
  StepRunner::Events ev = mailbox_.events_for(i, t.grant);
  runner_->start(std::move(t), std::move(ev));
  notify();
}

void Executor::finish_twins(size_t i, StepState st) {
  if (auto p = primaries_.find(digest(i)); p && *p == i) primaries_.erase(i);
  auto t = twins_.find(i);
  if (t == twins_.end()) return;
  std::vector<size_t> waiting = std::move(t->second);
  twins_.erase(t);
  twins_waiting_ -= std::min(twins_waiting_, waiting.size());
  const StepRecord& first = report_.steps[i];
  for (size_t j : waiting) {
    if (report_.steps[j].state != StepState::kPending) continue;
    if (st != StepState::kExecuted && st != StepState::kCached) {
      // The first did not compute it: each of the others tries for itself.
      ready_.push_back(j);
      continue;
    }
    // Its result is the first's: reported as cached from it, no divergence.
    StepRecord r;
    r.name = report_.steps[j].name;
    r.key = key(j);
    r.basis = std::move(report_.steps[j].basis);
    r.outputs = first.outputs;
    r.node = first.node;
    r.cores = first.cores;
    r.computed_by = first.computed_by;
    r.log = first.log;
    r.state = StepState::kCached;
    r.reason = fmt::format("cached: the same key as '{}', computed once in this run", first.name);
    std::vector<std::string> problems;
    ResultStamps seen;
    auto m = cache_.materialize(r, &problems, o_.record_settled ? &seen : nullptr);
    if (!m.ok()) problems.push_back(m.error().message());
    if (!problems.empty()) {
      for (auto& pr : problems) report_.problems.push_back(std::move(pr));
      r.state = StepState::kFailed;
      r.reason = fmt::format("its result, computed by '{}', could not be put in place", first.name);
    } else if (o_.record_settled) {
      for (auto& f : seen.files) facts_[j].files.push_back(std::move(f));
      for (const auto& [out, rec] : r.outputs) facts_[j].objects.push_back(rec.object);
      if (!seen.whole) settleable_ = false;
    }
    finish_step(j, std::move(r));
  }
}

bool Executor::retry_later(StepResult& d) {
  size_t i = d.step;
  const Step& s = g_.steps[i];
  if (d.record.state != StepState::kFailed || attempts_[i] > s.retries || cancelled_ ||
      stop_new_) {
    return false;
  }
  // 1 s, 2 s, 4 s, ... up to retry_max: a step that fails for something outside it (a
  // busy file system, a licence server) gets time for that to pass.
  auto delay = o_.retry_min;
  for (int k = 1; k < attempts_[i] && delay < o_.retry_max; ++k) delay *= 2;
  delay = std::min(delay, o_.retry_max);
  retrying_.push_back({clock_.steady() + delay, i, std::move(d.record)});
  return true;
}

void Executor::requeue_retries() {
  auto now = clock_.steady();
  for (size_t k = 0; k < retrying_.size();) {
    Retry& r = retrying_[k];
    if (!cancelled_ && !stop_new_ && r.at > now) {
      ++k;
      continue;
    }
    size_t i = r.step;
    if (cancelled_ || stop_new_) {
      // No more attempts: it ends as its last one did.
      StepRecord last = std::move(r.last);
      retrying_.erase(retrying_.begin() + static_cast<std::ptrdiff_t>(k));
      claims_.release(i, key(i));
      claims_.drop(i);
      finish_step(i, std::move(last));
      continue;
    }
    retrying_.erase(retrying_.begin() + static_cast<std::ptrdiff_t>(k));
    queued_[shape_of(g_.steps[i])].push_back(i);
    ++queued_count_;
  }
}

void Executor::collect_settled() {
  size_t n = g_.steps.size();
  if (!o_.index || o_.dry_run || o_.leases || cancelled_ || !settleable_ || n == 0 ||
      static_cast<size_t>(report_.count(StepState::kCached) +
                          report_.count(StepState::kExecuted)) != n ||
      !report_.problems.empty() || !report_.divergences.empty()) {
    return;
  }
  std::optional<Settled> rec = build_settled(
      {&g_, &facts_, &reuse_.fingerprints(), &reuse_.reused_from(),
       o_.reuse ? o_.reuse->record : nullptr, &tools_});
  if (rec) report_.settled = std::move(*rec);
}

void Executor::summarise_notices() {
  // One line for the run: how many steps have notices (what their launcher did not do,
  // files they left undeclared), the first with its first; each step keeps its own.
  std::vector<size_t> noted;
  for (size_t i = 0; i < report_.steps.size(); ++i) {
    if (!report_.steps[i].notices.empty()) noted.push_back(i);
  }
  if (noted.empty()) return;
  const StepRecord& first = report_.steps[noted[0]];
  report_.launch_notices.push_back(fmt::format(
      "{} step(s) have notices; {}: {}{}", noted.size(), first.name,
      first.notices[0], noted.size() > 1 ? " (each step's notices are in the report)" : ""));
}

Result<void> Executor::begin() {
  t0_ = clock_.steady();
  report_.pipeline = g_.name;
  report_.store = store_.describe();
  report_.worker = o_.worker;
  report_.dry_run = o_.dry_run;
  report_.notices = store_.notices();
  report_.started = utc_text(clock_.wall());
  size_t n = g_.steps.size();
  report_.steps.resize(n);
  waiting_.assign(n, 0);
  dependents_.assign(n, {});
  digests_.assign(kDigestBytes * n, '\0');
  primaries_.reserve(n);
  keyed_.assign(n, 0);
  attempts_.assign(n, 0);
  in_flight_.resize(n);
  released_early_.assign(n, 0);
  input_stamps_.assign(n, {});
  facts_.assign(o_.record_settled ? n : 0, {});
  if (o_.reuse) report_.recorded = o_.reuse->steps;
  for (size_t i = 0; i < n; ++i) {
    report_.steps[i].name = g_.steps[i].name;
    waiting_[i] = static_cast<int>(g_.steps[i].deps.size());
    for (size_t dep : g_.steps[i].deps) dependents_[dep].push_back(i);
    if (waiting_[i] == 0) ready_.push_back(i);
  }
  // Before anything runs: a step that can never fit is refused; every tool must answer.
  BERTH_CHECK(check_fits());
  BERTH_CHECK(read_tool_versions());
  if (!o_.dry_run && ::mkdir(o_.results_dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return fail(Errc::kIo,
                fmt::format("cannot create {}: {}", o_.results_dir, std::strerror(errno)));
  }
  if (!o_.dry_run) {
    if (o_.runner == nullptr) return fail(Errc::kInternal, "a run with no step runner");
    runner_ = o_.runner;
    runner_->begin(RunStart{&cache_, &tools_, t0_, o_.leases != nullptr, o_.record_settled});
  }
  BERTH_CHECK(mailbox_.open());
  // The run's index writes are batched, committed every second or so: a 10,000-step
  // rerun is a few commits, and a killed run loses at most a second of what it learnt.
  if (o_.index) (void)o_.index->begin();
  last_commit_ = clock_.steady();
  backoff_ = o_.backoff_min;
  return Ok{};
}

void Executor::commit_now_and_then() {
  if (o_.index && clock_.steady() - last_commit_ > std::chrono::seconds(1)) {
    (void)o_.index->commit();
    (void)o_.index->begin();
    last_commit_ = clock_.steady();
  }
}

bool Executor::refuse_what_never_fits() {
  if (in_flight_.in_flight() != 0 || queued_count_ == 0 || stop_new_ || cancelled_) return false;
  // Nothing runs and still nothing fits: it never will (a reservation holds it).
  for (auto& [shape, queue] : queued_) {
    for (size_t i : queue) {
      StepRecord r = report_.steps[i];
      r.state = StepState::kRefused;
      r.reason = "does not fit in the pool even with nothing else running";
      finish_step(i, std::move(r));
    }
    queue.clear();
  }
  queued_count_ = 0;
  return true;
}

void Executor::judge_rearm() {
  if (judged_ || !ready_.empty()) return;
  // A re-arm that found work (done elsewhere, or a claim expired) starts the backoff
  // again; one that found everything still claimed doubles it.
  judged_ = true;
  backoff_ = deferred_.size() < deferred_before_rearm_ ? o_.backoff_min
                                                       : std::min(o_.backoff_max, backoff_ * 2);
}

void Executor::rearm_when_due() {
  if (next_rearm_ == SteadyTime::max() || clock_.steady() < next_rearm_) return;
  next_rearm_ = SteadyTime::max();
  if (cancelled_ || stop_new_) return;
  deferred_before_rearm_ = deferred_.size();
  judged_ = false;
  ++report_.leases.rearms;
  for (size_t i : deferred_) ready_.push_back(i);
  deferred_.clear();
}

void Executor::wait_for_news() {
  if (!deferred_.empty() && next_rearm_ == SteadyTime::max()) {
    next_rearm_ = clock_.steady() + backoff_;
  }
  // Wake for the next re-arm, retry or renewal, whichever comes first.
  SteadyTime wake_at = next_rearm_;
  for (const Retry& r : retrying_) wake_at = std::min(wake_at, r.at);
  wake_at = std::min(wake_at, claims_.next_renewal());
  int timeout_ms = -1;
  if (wake_at != SteadyTime::max()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - clock_.steady());
    timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
  }
  // Wait for a step to end, the run to be cancelled, or the next re-arm. This thread
  // is the only one that waits between scopes: no step thread is ever blocked here.
  pollfd fds[2] = {{mailbox_.fd(), POLLIN, 0}, {o_.cancel_fd, POLLIN, 0}};
  nfds_t nfds = o_.cancel_fd >= 0 && !cancelled_ ? 2 : 1;
  int got = o_.wait ? o_.wait(fds, nfds, timeout_ms) : ::poll(fds, nfds, timeout_ms);
  if (got < 0) return;  // EINTR: looked at again
  if (o_.cancel_fd >= 0 && !cancelled_ && (fds[1].revents & POLLIN)) {
    cancelled_ = true;
    if (runner_ != nullptr) runner_->cancel();  // running steps end, nothing stored
  }
}

void Executor::take_mail() {
  RunnerMailbox::Mail mail = mailbox_.take();
  for (auto [i, id] : mail.exited) {
    pool_.release(id);
    in_flight_.exited(i);
  }
  for (auto& [i, outputs] : mail.known) {
    // Before its Done (posted after this, by the same thread): dependents may start.
    report_.steps[i].outputs = std::move(outputs);
    released_early_[i] = 1;
    for (size_t j : dependents_[i]) {
      if (--waiting_[j] == 0 && report_.steps[j].state == StepState::kPending) ready_.push_back(j);
    }
  }
  for (StepResult& d : mail.done) step_done(d);
}

void Executor::step_done(StepResult& d) {
  in_flight_.done(d.step);
  for (auto& dv : d.divergences) report_.divergences.push_back(dv);
  for (auto& p : d.problems) report_.problems.push_back(p);
  bool ok = d.record.state == StepState::kExecuted;
  if (!ok && (requeue_lost(d) || retry_later(d))) {
    notify();
    return;
  }
  if (!ok && attempts_[d.step] > 1) {
    d.record.reason +=
        fmt::format(" (attempt {} of {})", attempts_[d.step], g_.steps[d.step].retries + 1);
  }
  // A failed or interrupted step hands its key back: another worker may do it.
  if (!ok) claims_.release(d.step, key(d.step));
  claims_.drop(d.step);
  if (o_.record_settled && ok) {
    // An executed step is in a settled record as a rerun would report it: from its row
    // (ours only), its objects present and its results in place.
    if (!d.row_ours || !d.results.whole) settleable_ = false;
    for (auto& f : d.results.files) facts_[d.step].files.push_back(std::move(f));
    for (const auto& [out, rec] : d.record.outputs) facts_[d.step].objects.push_back(rec.object);
  }
  finish_step(d.step, std::move(d.record));
  notify();
}

void Executor::schedule() {
  for (;;) {
    while (!ready_.empty() && !cancelled_ && !stop_new_) {
      size_t i = ready_.front();
      ready_.pop_front();
      prepare(i);
      notify();
    }
    judge_rearm();
    requeue_retries();
    // Every step still running (or waiting to retry) keeps its claim.
    claims_.renew([this](size_t i) { return key(i); });
    grant_queued();
    commit_now_and_then();
    if (refuse_what_never_fits()) continue;
    bool idle = in_flight_.in_flight() == 0 && ready_.empty() && retrying_.empty();
    if (idle && (deferred_.empty() || cancelled_ || stop_new_)) break;
    wait_for_news();
    rearm_when_due();
    take_mail();
  }
}

RunReport Executor::end() {
  if (runner_ != nullptr) runner_->join();
  if (o_.index) (void)o_.index->commit();  // a failed commit only loses the cache
  for (size_t i = 0; i < report_.steps.size(); ++i) {
    StepRecord& rec = report_.steps[i];
    if (rec.state != StepState::kPending) continue;
    if (o_.dry_run) {
      set_state(i, StepState::kWouldRun);
      rec.reason = "an input it reads would be recomputed";
    } else {
      set_state(i, cancelled_ ? StepState::kCancelled : StepState::kSkipped);
      rec.reason = cancelled_ ? "not run: the run was interrupted" : "not run: --fail-fast";
    }
  }
  if (o_.record_settled) collect_settled();
  summarise_notices();
  report_.elapsed_s = now_s();
  return std::move(report_);
}

Result<RunReport> Executor::run() {
  BERTH_CHECK(begin());
  schedule();
  return end();
}

}  // namespace scheduler

Result<RunReport> run_graph(const Graph& graph, store::ObjectStore& store, place::Pool& pool,
                            const Env& parent, const RunOptions& options) {
  scheduler::Executor e(graph, store, pool, parent, options);
  return e.run();
}

}  // namespace berth::pipeline
