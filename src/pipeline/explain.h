// Explainer: why a step must run — what differs from its basis in the previous run
// (spec 04 §8: a report's `reason`, a dry run's reason for a would-run step).
//
// The previous run's bases come from the caller: a map given whole, or looked up one
// step at a time in the previous report (the first few steps to explain, since most
// reruns after an edit run a few steps of many), then loaded whole once. A no-op rerun
// explains nothing and so never reads the previous report.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace berth::pipeline {

struct PreviousBases {
  // Step name -> basis (dumped JSON); used when not empty.
  std::map<std::string, std::string> given;
  // Otherwise: one step's basis, quickly (nullopt: not found so); then everything.
  std::function<std::optional<std::string>(const std::string& step)> find;
  std::function<std::map<std::string, std::string>()> load;
};

class Explainer {
 public:
  explicit Explainer(PreviousBases previous) : previous_(std::move(previous)) {}
  // "new: …", "its command changed", "input 'x' changed (data/a.txt)", "tool 'v'
  // changed", or "its result is not in the store …" when nothing recorded differs.
  // `basis` is StepRecord::basis, JSON text; it is parsed only when there is an
  // earlier one to compare it with.
  std::string why(const std::string& step, std::string_view basis);

 private:
  PreviousBases previous_;
  bool loaded_ = false;
  int quick_lookups_ = 0;
  std::map<std::string, std::string> loaded_previous_;
};

}  // namespace berth::pipeline
