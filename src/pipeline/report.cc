// The run report as JSON (spec 04 §8).
#include <nlohmann/json.hpp>

#include "pipeline/executor.h"

namespace berth::pipeline {

using json = nlohmann::ordered_json;

std::string report_json(const RunReport& r) {
  json j;
  j["version"] = 1;
  j["pipeline"] = r.pipeline;
  j["store"] = r.store;
  j["started"] = r.started;
  if (!r.worker.empty()) j["worker"] = r.worker;
  j["elapsed_s"] = r.elapsed_s;
  for (StepState s : {StepState::kExecuted, StepState::kCached, StepState::kFailed,
                      StepState::kSkipped, StepState::kRefused, StepState::kCancelled}) {
    j[step_state_name(s)] = r.count(s);
  }
  j["divergences"] = json::array();
  for (const auto& d : r.divergences) {
    j["divergences"].push_back({{"step", d.step}, {"key", d.key}, {"output", d.output},
                                {"ours", d.ours}, {"theirs", d.theirs}});
  }
  j["problems"] = r.problems;
  j["notices"] = r.notices;
  j["leases"] = {{"acquired", r.leases.acquired}, {"held", r.leases.held},
                 {"lock_free", r.leases.lock_free}, {"released", r.leases.released},
                 {"rearms", r.leases.rearms}};
  j["steps"] = json::array();
  for (const auto& s : r.steps) {
    json o = json::object();
    for (const auto& [name, out] : s.outputs) {
      o[name] = {{"object", out.object}, {"form", out.form}, {"canonical", out.canonical}};
    }
    j["steps"].push_back({{"name", s.name}, {"state", step_state_name(s.state)}, {"key", s.key},
                          {"reason", s.reason}, {"node", s.node}, {"cores", s.cores},
                          {"computed_by", s.computed_by}, {"start_s", s.start_s}, {"end_s", s.end_s}, {"exit_code", s.exit_code},
                          {"outputs", o}});
    auto embed = [](const std::string& text) {
      json v = json::parse(text, nullptr, false);
      return v.is_discarded() ? json(nullptr) : v;
    };
    if (!s.basis.empty()) j["steps"].back()["basis"] = embed(s.basis);
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace berth::pipeline
