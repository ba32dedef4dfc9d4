// The run report as JSON (spec 04 §8).
#include <optional>

#include <nlohmann/json.hpp>

#include "pipeline/executor.h"

namespace berth::pipeline {

using json = nlohmann::ordered_json;

json output_json(const StepRecord::Output& out) {
  json rec = json::object();
  rec["object"] = out.object;
  rec["form"] = out.form;
  rec["canonical"] = out.canonical;
  return rec;
}

namespace {

constexpr StepState kCounted[] = {StepState::kExecuted, StepState::kCached, StepState::kFailed,
                                  StepState::kSkipped,  StepState::kRefused, StepState::kCancelled};

// Every field but the steps.
json head_of(const RunReport& r, std::optional<size_t> settled_steps) {
  json j;
  j["version"] = 1;
  j["pipeline"] = r.pipeline;
  j["store"] = r.store;
  j["started"] = r.started;
  if (!r.worker.empty()) j["worker"] = r.worker;
  j["elapsed_s"] = r.elapsed_s;
  for (StepState s : kCounted) {
    j[step_state_name(s)] = !settled_steps            ? r.count(s)
                            : s == StepState::kCached ? static_cast<int>(*settled_steps)
                                                      : 0;
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
  if (settled_steps) j["settled"] = true;
  return j;
}

}  // namespace

std::string report_json_head(const RunReport& r, std::optional<size_t> settled_steps) {
  // Compact: a 10,000-step report is megabytes, written beside the pipeline and
  // (--format json) to stdout; `jq .` indents it for a reader. The steps, already
  // JSON, follow rather than being parsed back in.
  std::string out = head_of(r, settled_steps).dump(-1, ' ', false, json::error_handler_t::replace);
  out.pop_back();  // the closing brace
  out += ",\"steps\":";
  return out;
}

std::string report_json(const RunReport& r, std::string_view steps, bool as_object,
                        std::optional<size_t> settled_steps) {
  if (as_object) {
    json j = head_of(r, settled_steps);
    j["steps_object"] = std::string(steps);
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  std::string out = report_json_head(r, settled_steps);
  out.reserve(out.size() + steps.size() + kReportTail.size());
  out.append(steps);
  out.append(kReportTail);
  return out;
}

std::string report_steps_json(const RunReport& r) {
  // Built field by field and moved into place: initializer lists copy every value,
  // which costs a 10,000-step report tens of milliseconds.
  json steps = json::array();
  steps.get_ref<json::array_t&>().reserve(r.steps.size());
  for (const auto& s : r.steps) {
    json o = json::object();
    for (const auto& [name, out] : s.outputs) o[name] = output_json(out);
    json st = json::object();
    st["name"] = s.name;
    st["state"] = step_state_name(s.state);
    st["key"] = s.key;
    st["reason"] = s.reason;
    st["node"] = s.node;
    st["cores"] = s.cores;
    st["computed_by"] = s.computed_by;
    st["start_s"] = s.start_s;
    st["end_s"] = s.end_s;
    st["exit_code"] = s.exit_code;
    st["outputs"] = std::move(o);
    if (!s.basis.is_null()) st["basis"] = s.basis;
    steps.push_back(std::move(st));
  }
  return steps.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string report_json(const RunReport& r) { return report_json(r, report_steps_json(r)); }

std::string settled_steps_json(const RunReport& r) {
  bool executed = false;
  for (const auto& s : r.steps) executed = executed || s.state == StepState::kExecuted;
  if (!executed) return report_steps_json(r);
  // What try_cached() makes of the row an executed step wrote: its node, cores and
  // computer are the row's provenance, which are this record's.
  RunReport cached;
  cached.steps = r.steps;
  for (auto& s : cached.steps) {
    if (s.state != StepState::kExecuted) continue;
    s.state = StepState::kCached;
    s.reason = std::string(kCachedReason);
    s.start_s = 0;
    s.end_s = 0;
    s.exit_code = 0;
  }
  return report_steps_json(cached);
}

}  // namespace berth::pipeline
