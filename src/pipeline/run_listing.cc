// berth run's lines about its steps (run_listing.h).
#include "pipeline/run_listing.h"

#include <fmt/format.h>

#include <array>

namespace berth::pipeline {
namespace {

// The states a template's summary counts, in the order it says them.
constexpr StepState kSummaryOrder[] = {
    StepState::kWouldRun, StepState::kCached,    StepState::kFailed,  StepState::kRefused,
    StepState::kSkipped,  StepState::kCancelled, StepState::kExecuted};

bool worth_a_line(const StepRecord& s) {
  return s.state == StepState::kFailed || s.state == StepState::kRefused ||
         s.state == StepState::kSkipped;
}

// One line per step template: its counts and an example, the first step that would run
// (else the first not cached, else its first): the reason a reader most needs.
std::vector<std::string> per_template(const RunReport& r) {
  struct Seen {
    std::array<size_t, kStepStates> n{};
    size_t steps = 0;
    const StepRecord* example = nullptr;
  };
  std::vector<Seen> seen(r.templates.size());
  auto rank = [](const StepRecord* s) {
    return s == nullptr                       ? 3
           : s->state == StepState::kWouldRun ? 0
           : s->state != StepState::kCached   ? 1
                                              : 2;
  };
  for (size_t i = 0; i < r.steps.size(); ++i) {
    Seen& t = seen[i < r.template_of.size() ? r.template_of[i] : 0];
    const StepRecord& s = r.steps[i];
    ++t.n[static_cast<size_t>(s.state)];
    ++t.steps;
    if (rank(&s) < rank(t.example)) t.example = &s;
  }
  std::vector<std::string> out;
  for (size_t k = 0; k < seen.size(); ++k) {
    if (seen[k].steps == 0) continue;
    std::string counts;
    for (StepState st : kSummaryOrder) {
      size_t n = seen[k].n[static_cast<size_t>(st)];
      if (n > 0) counts += fmt::format(", {} {}", n, step_state_name(st));
    }
    out.push_back(fmt::format("{}: {} step(s){}; e.g. {}", r.templates[k], seen[k].steps, counts,
                              step_line(*seen[k].example)));
  }
  out.push_back(
      fmt::format("({} step lines summarised per step template; --every-step lists each step)",
                  r.steps.size()));
  return out;
}

}  // namespace

std::string_view reason_once(const StepRecord& s) {
  std::string_view reason = s.reason;
  std::string_view state = step_state_name(s.state);
  if (reason.size() > state.size() + 1 && reason.substr(0, state.size()) == state &&
      reason.substr(state.size(), 2) == ": ") {
    reason.remove_prefix(state.size() + 2);
  }
  return reason;
}

std::string step_line(const StepRecord& s, std::string_view hint) {
  std::string_view reason = reason_once(s);
  return fmt::format("{:<9} {}{}{}{}", step_state_name(s.state), s.name, reason.empty() ? "" : ": ",
                     reason, hint);
}

std::vector<std::string> step_lines(const RunReport& r, const ListingOptions& o) {
  auto hint = [&o](const StepRecord& s) { return o.hint ? o.hint(s) : std::string(); };
  std::vector<std::string> out;
  if (o.dry_run && o.commands) {
    for (const StepRecord& s : r.steps) {
      if (s.state == StepState::kWouldRun) out.push_back(s.name + ": " + s.command);
      if (worth_a_line(s)) out.push_back(step_line(s, hint(s)));
    }
    return out;
  }
  if (o.dry_run && !o.every_step && r.steps.size() > kMostStepLines && !r.templates.empty()) {
    return per_template(r);
  }
  for (const StepRecord& s : r.steps) {
    if (o.dry_run || worth_a_line(s)) out.push_back(step_line(s, hint(s)));
  }
  return out;
}

std::string summary_line(const RunReport& r) {
  auto counts = r.counts();  // one pass over 10^6 steps, not six
  auto n = [&counts](StepState s) { return counts[static_cast<size_t>(s)]; };
  std::string head = r.dry_run ? fmt::format("{} would run", n(StepState::kWouldRun))
                               : fmt::format("{} executed", n(StepState::kExecuted));
  return fmt::format(
      "{} step(s): {}, {} cached, {} failed, {} skipped, {} refused{} in {:.2f} s", r.steps.size(),
      head, n(StepState::kCached), n(StepState::kFailed), n(StepState::kSkipped),
      n(StepState::kRefused),
      n(StepState::kCancelled) ? fmt::format(", {} cancelled", n(StepState::kCancelled)) : "",
      r.elapsed_s);
}

}  // namespace berth::pipeline
