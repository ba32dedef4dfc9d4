// The run report as JSON (spec 04 §8).
#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "pipeline/report.h"

#include "util/memory.h"
#include "util/strings.h"

namespace berth::pipeline {

const char* step_state_name(StepState s) {
  switch (s) {
    case StepState::kPending: return "pending";
    case StepState::kCached: return "cached";
    case StepState::kExecuted: return "executed";
    case StepState::kFailed: return "failed";
    case StepState::kSkipped: return "skipped";
    case StepState::kRefused: return "refused";
    case StepState::kCancelled: return "cancelled";
    case StepState::kWouldRun:
      return "would-run";
  }
  return "pending";
}


int RunReport::count(StepState s) const {
  int n = 0;
  for (const auto& st : steps) n += st.state == s;
  return n;
}

std::array<int, kStepStates> RunReport::counts() const {
  std::array<int, kStepStates> n{};
  for (const auto& st : steps) ++n[static_cast<size_t>(st.state)];
  return n;
}

int RunReport::exit_code() const {
  auto n = counts();
  auto of = [&n](StepState s) { return n[static_cast<size_t>(s)]; };
  if (of(StepState::kCancelled)) return 130;
  if (of(StepState::kFailed) || of(StepState::kRefused)) return 1;
  return 0;
}


std::string log_tail(std::string_view log) {
  while (!log.empty() && (log.back() == '\n' || log.back() == '\r')) log.remove_suffix(1);
  size_t start = log.size();
  size_t end = log.size();  // where the line being taken ends, before its newline
  size_t lines = 0;
  while (end > 0 && lines < kLogTailLines) {
    size_t nl = log.rfind('\n', end - 1);
    size_t from = nl == std::string_view::npos ? 0 : nl + 1;
    if (log.size() - from > kLogTailBytes) {
      // Past the budget: an earlier line is left out whole; the last line alone keeps
      // its end, cut where a UTF-8 character starts.
      if (lines > 0) break;
      start = log.size() - kLogTailBytes;
      while (start < log.size() && (static_cast<unsigned char>(log[start]) & 0xC0) == 0x80) {
        ++start;
      }
      break;
    }
    start = from;
    ++lines;
    if (nl == std::string_view::npos) break;
    end = nl;
  }
  return std::string(log.substr(start));
}

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
// The nodes the run's steps ran on, each once, in the order first seen.
std::vector<std::string> nodes_used(const RunReport& r) {
  std::vector<std::string> out;
  for (const auto& s : r.steps) {
    if (!s.recorded.empty() || s.state == StepState::kCached) continue;
    for (auto n : str::split(s.node, ',')) {
      if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end()) out.emplace_back(n);
    }
  }
  return out;
}

json head_of(const RunReport& r, std::optional<size_t> settled_steps) {
  json j;
  j["version"] = 1;
  j["pipeline"] = r.pipeline;
  j["store"] = r.store;
  j["started"] = r.started;
  if (!r.run.empty()) j["run"] = r.run;
  if (!r.pipeline_path.empty()) j["pipeline_path"] = r.pipeline_path;
  if (!r.host.empty()) j["host"] = r.host;
  if (!r.targets.empty()) j["targets"] = r.targets;
  if (!r.worker.empty()) j["worker"] = r.worker;
  j["elapsed_s"] = r.elapsed_s;
  if (std::vector<std::string> nodes = nodes_used(r); !nodes.empty()) j["nodes"] = nodes;
  for (StepState s : kCounted) {
    j[step_state_name(s)] = !settled_steps            ? r.count(s)
                            : s == StepState::kCached ? static_cast<int>(*settled_steps)
                                                      : 0;
  }
  // A dry run's count of the steps it would run: in no other report.
  if (r.dry_run) j["would_run"] = r.count(StepState::kWouldRun);
  j["divergences"] = json::array();
  for (const auto& d : r.divergences) {
    j["divergences"].push_back({{"step", d.step}, {"key", d.key}, {"output", d.output},
                                {"ours", d.ours}, {"theirs", d.theirs}});
  }
  j["problems"] = r.problems;
  std::vector<std::string> notices = r.notices;
  notices.insert(notices.end(), r.launch_notices.begin(), r.launch_notices.end());
  j["notices"] = notices;
  j["leases"] = {{"acquired", r.leases.acquired}, {"held", r.leases.held},
                 {"lock_free", r.leases.lock_free}, {"released", r.leases.released},
                 {"rearms", r.leases.rearms}, {"extended", r.leases.extended},
                 {"lost", r.leases.lost}};
  j["store_waits"] = {{"outages", r.store_waits.outages},
                      {"waited_s", r.store_waits.waited_s},
                      {"gave_up", r.store_waits.gave_up}};
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
                        std::optional<size_t> settled_steps,
                        const std::vector<std::string_view>& steps_changed) {
  if (as_object) {
    json j = head_of(r, settled_steps);
    j["steps_object"] = std::string(steps);
    if (!steps_changed.empty()) {
      json ran = json::array();
      for (std::string_view entry : steps_changed) {
        // Entries are berth's own JSON; one that did not parse is kept as its text.
        json e = json::parse(entry, nullptr, false);
        ran.push_back(e.is_discarded() ? json(std::string(entry)) : std::move(e));
      }
      j["steps_changed"] = std::move(ran);
    }
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  std::string out = report_json_head(r, settled_steps);
  out.reserve(out.size() + steps.size() + kReportTail.size());
  out.append(steps);
  out.append(kReportTail);
  return out;
}

namespace {

// `s` as a JSON string, as nlohmann writes it (error_handler_t::replace).
void put_string(std::string& out, std::string_view s) { str::append_json_string(out, s); }

void put_key(std::string& out, std::string_view k) {
  out += '"';
  out.append(k);  // every key below is a literal of plain ASCII
  out += "\":";
}

// One step's entry; with `as_rerun`, an executed step as what try_cached() makes of
// the row it wrote: cached, the cached reason, no times, exit code 0 (its node, cores
// and computer are the row's provenance, which are the record's). A reused step's
// entry is the record's, verbatim.
void write_step(std::string& out, const StepRecord& s, bool as_rerun) {
  if (!s.recorded.empty()) {
    out.append(s.recorded);
    return;
  }
  bool hit = as_rerun && s.state == StepState::kExecuted;
  out += '{';
  put_key(out, "name");
  put_string(out, s.name);
  out += ',';
  put_key(out, "state");
  put_string(out, step_state_name(hit ? StepState::kCached : s.state));
  out += ',';
  put_key(out, "key");
  put_string(out, s.key);
  out += ',';
  put_key(out, "reason");
  put_string(out, hit ? kCachedReason : std::string_view(s.reason));
  out += ',';
  put_key(out, "node");
  put_string(out, s.node);
  out += ',';
  put_key(out, "cores");
  put_string(out, s.cores);
  out += ',';
  put_key(out, "computed_by");
  put_string(out, s.computed_by);
  out += ',';
  put_key(out, "start_s");
  out += json(hit ? 0.0 : s.start_s).dump();
  out += ',';
  put_key(out, "end_s");
  out += json(hit ? 0.0 : s.end_s).dump();
  out += ',';
  put_key(out, "exit_code");
  out += std::to_string(hit ? 0 : s.exit_code);
  out += ',';
  put_key(out, "outputs");
  out += '{';
  bool first_output = true;
  for (const auto& [name, o] : s.outputs) {
    if (!first_output) out += ',';
    first_output = false;
    put_string(out, name);
    out += ":{";
    put_key(out, "object");
    put_string(out, o.object);
    out += ',';
    put_key(out, "form");
    put_string(out, o.form);
    out += ',';
    put_key(out, "canonical");
    put_string(out, o.canonical);
    out += '}';
  }
  out += '}';
  if (!s.log.empty()) {
    out += ',';
    put_key(out, "log");
    put_string(out, s.log);
  }
  if (!s.log_tail.empty() && !hit) {
    out += ',';
    put_key(out, "log_tail");
    put_string(out, s.log_tail);
  }
  if (s.attempts > 1 && !hit) {
    out += ',';
    put_key(out, "attempts");
    out += std::to_string(s.attempts);
  }
  if (s.timed_out && !hit) {
    out += ',';
    put_key(out, "timed_out");
    out += "true";
  }
  if (!s.command.empty()) {
    out += ',';
    put_key(out, "command");
    put_string(out, s.command);
  }
  if (!s.notices.empty() && !hit) {
    out += ',';
    put_key(out, "notices");
    out += '[';
    for (size_t i = 0; i < s.notices.size(); ++i) {
      if (i > 0) out += ',';
      put_string(out, s.notices[i]);
    }
    out += ']';
  }
  if (!s.basis.empty()) {
    out += ',';
    put_key(out, "basis");
    out += s.basis;
  }
  out += '}';
}

// The steps array. Written directly rather than built as a JSON tree and dumped: for
// a 10,000-step report the tree cost a tenth of a second. The bytes are nlohmann's
// (report_test).
std::string write_steps(const RunReport& r, bool as_rerun, EntrySpans* spans) {
  // Sized once, its pages asked for at once: a reused step's entry is copied as it was
  // recorded, so its size is known; 640 bytes are a fresh entry's usual size.
  size_t want = 2;
  for (const StepRecord& s : r.steps) want += (s.recorded.empty() ? 640 : s.recorded.size()) + 1;
  std::string out;
  memory::reserve_populated(out, want);
  if (spans) spans->clear(), spans->reserve(r.steps.size());
  out += '[';
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (i > 0) out += ',';
    size_t at = out.size();
    write_step(out, r.steps[i], as_rerun);
    if (spans) spans->emplace_back(at, out.size() - at);
  }
  out += ']';
  return out;
}

}  // namespace

std::string report_steps_json(const RunReport& r, EntrySpans* spans) {
  return write_steps(r, false, spans);
}

std::string step_entry_json(const StepRecord& s, bool as_rerun) {
  std::string out;
  write_step(out, s, as_rerun);
  return out;
}

std::string report_json(const RunReport& r) { return report_json(r, report_steps_json(r)); }

std::string settled_steps_json(const RunReport& r) { return write_steps(r, true, nullptr); }

std::string settled_steps_json(const RunReport& r, std::string_view steps,
                               const EntrySpans& spans, EntrySpans* out_spans) {
  std::string out;
  memory::reserve_populated(out, steps.size() + 64);
  if (out_spans) out_spans->clear(), out_spans->reserve(r.steps.size());
  out += '[';
  for (size_t i = 0; i < r.steps.size(); ++i) {
    if (i > 0) out += ',';
    size_t at = out.size();
    if (r.steps[i].state == StepState::kExecuted || i >= spans.size()) {
      write_step(out, r.steps[i], true);
    } else {
      out.append(steps.substr(spans[i].first, spans[i].second));
    }
    if (out_spans) out_spans->emplace_back(at, out.size() - at);
  }
  out += ']';
  return out;
}

std::optional<std::string> find_step_basis(std::string_view report, std::string_view name) {
  // Every step object starts so (write_steps); inside a JSON string a quote is escaped,
  // so the needle cannot start inside one.
  std::string needle = "{\"name\":";
  put_string(needle, name);
  needle += ",\"state\":";
  size_t at = report.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  // The object's extent; a step is a few levels deep, and anything deeper is not one
  // of ours and never reaches nlohmann's recursion.
  size_t end = str::json_value_end(report, at, kMaxReportDepth);
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view text = report.substr(at, end - at);
  auto step = nlohmann::json::parse(text, nullptr, false);
  if (step.is_discarded() || !step.is_object() || !step.contains("basis") ||
      !step["basis"].is_object()) {
    return std::nullopt;
  }
  return step["basis"].dump();
}

}  // namespace berth::pipeline
