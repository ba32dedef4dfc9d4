// FakeRunner: a StepRunner (step_runner.h) that runs nothing — what becomes of each step
// it is handed is decided by the test, by name — so that the executor's scheduling and
// the session's steps are tested with no process and no sleep. An executed step's
// outputs are stored for real ("<output> of <key>"), its row published as the real
// runner publishes it, and, with results_dir, its outputs put in place.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "pipeline/step_cache.h"
#include "pipeline/step_runner.h"
#include "store/object_store.h"

namespace berth::pipeline {

// What the fake makes of a step, by name. Executed is the default.
struct Outcome {
  StepState state = StepState::kExecuted;
  std::string reason;
  bool hold = false;  // keep it running until release() or cancel()
  bool timed_out = false;
  double seconds = 0;  // how long it ran: its end_s is its start_s plus this
  std::string lost_node{};  // lost with this node's agent (spec 08 §5)
};

class FakeRunner final : public StepRunner {
 public:
  explicit FakeRunner(store::ObjectStore& store) : store_(store) {}
  // Where an executed step's outputs are put in place, as the real runner materialises
  // them ("": nowhere): <results_dir>/<step>/<output>, the object's bytes.
  std::string results_dir;
  std::map<std::string, Outcome> outcomes;
  // Per step, the outcomes of its first attempts, in order; then `outcomes` decides.
  std::map<std::string, std::deque<Outcome>> attempts;
  std::vector<std::string> started;  // in the order handed over
  std::vector<int> attempt_numbers;  // StepTask::record.attempts, in the same order
  std::vector<std::string> nodes;    // StepTask::record.node, in the same order
  int max_running = 0;
  bool cancelled = false;

  void start(StepTask task, Events events) override {
    started.push_back(task.record.name);
    attempt_numbers.push_back(task.record.attempts);
    nodes.push_back(task.record.node);
    Running r{std::move(task), std::move(events), {}};
    Outcome o = outcomes[r.task.record.name];
    if (auto& seq = attempts[r.task.record.name]; !seq.empty()) {
      o = seq.front();
      seq.pop_front();
    }
    r.outcome = o;
    running_.push_back(std::move(r));
    max_running = std::max(max_running, static_cast<int>(running_.size()));
    if (!o.hold) finish(running_.size() - 1, o);
  }
  void cancel() override {
    cancelled = true;
    while (!running_.empty()) finish(0, Outcome{StepState::kCancelled, "cancelled", false});
  }
  void join() override {}
  // Ends the held step `name` as its outcome says (held or not).
  void release(const std::string& name) {
    for (size_t k = 0; k < running_.size(); ++k) {
      if (running_[k].task.record.name != name) continue;
      Outcome o = running_[k].outcome;
      o.hold = false;
      finish(k, o);
      return;
    }
    ADD_FAILURE() << name << " is not running";
  }
  size_t running() const { return running_.size(); }
  std::string key_of(const std::string& name) const {
    for (const auto& r : running_) {
      if (r.task.record.name == name) return r.task.key;
    }
    return "";
  }

 private:
  struct Running {
    StepTask task;
    Events events;
    Outcome outcome;
  };
  void finish(size_t k, const Outcome& o) {
    Running r = std::move(running_[k]);
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(k));
    r.events.exited();
    StepResult d;
    d.step = r.task.step;
    d.record = r.task.record;
    d.record.state = o.state;
    d.record.reason = o.reason;
    d.record.timed_out = o.timed_out;
    d.record.end_s = d.record.start_s + o.seconds;
    d.lost_node = o.lost_node;
    if (o.state == StepState::kExecuted) {
      // Its outputs, stored for real: dependents key on them, twins materialise them.
      std::string outs;
      for (const std::string& out : r.task.spec->outputs) {
        auto name = store_.put_object(fmt::format("{} of {}", out, r.task.key));
        EXPECT_TRUE(name.ok());
        d.record.outputs[out] = {*name, "bytes", *name};
        if (!results_dir.empty()) {
          std::filesystem::path at = std::filesystem::path(results_dir) / r.task.record.name;
          std::filesystem::create_directories(at);
          std::ofstream(at / out, std::ios::binary) << fmt::format("{} of {}", out, r.task.key);
          // Stamped for a settled record, as the real runner stamps what it puts in place.
          auto stamp = result_stamp((at / out).string());
          if (stamp.ok()) d.results.files.push_back({(at / out).string(), *stamp, false, {}});
          if (!stamp.ok()) d.results.whole = false;
        }
        outs += fmt::format(R"({}"{}":{{"object":"{}","form":"bytes","canonical":"{}"}})",
                            outs.empty() ? "" : ",", out, *name, *name);
      }
      // Published as the real runner publishes: the row, once the objects are stored.
      std::string row = fmt::format(
          R"({{"version":1,"key":"{}","step":"{}","outputs":{{{}}},"provenance":{{"host":"n0"}}}})",
          r.task.key, r.task.record.name, outs);
      auto put = store_.put_row(store::row_address(kStepsRow, r.task.key), row);
      EXPECT_TRUE(put.ok());
      d.row_ours = put.ok() && put->created;
    }
    r.events.done(std::move(d));
  }
  store::ObjectStore& store_;
  std::vector<Running> running_;
};

}  // namespace berth::pipeline
