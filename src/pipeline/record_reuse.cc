// Reuse from the settled record (record_reuse.h).
#include "pipeline/record_reuse.h"

#include <nlohmann/json.hpp>

#include "store/object_store.h"

namespace berth::pipeline {

RecordReuse::RecordReuse(const SettledReuse* reuse, const Graph& g, bool keep)
    : reuse_(reuse), g_(g) {
  reused_from_.assign(keep ? g.steps.size() : 0, -1);
  fingerprints_.assign(keep ? g.steps.size() : 0, {});
}

std::optional<std::string_view> RecordReuse::entry_for(size_t i, const ToolVersions& tools) {
  if (reuse_ == nullptr) return std::nullopt;
  const SettledReuse& ru = *reuse_;
  const Step& s = g_.steps[i];
  // The record's entries are in the order of the graph that left it: the same
  // position first, by name only when the graph differs (an edited pipeline file).
  size_t at = i;
  if (at >= ru.record->entries.size() || ru.record->entries[at].name != s.name) {
    if (names_.empty()) {
      const auto& entries = ru.record->entries;
      names_.reserve(entries.size());
      for (size_t k = 0; k < entries.size(); ++k) names_.emplace(entries[k].name, k);
    }
    auto it = names_.find(s.name);
    if (it == names_.end()) return std::nullopt;
    at = it->second;
  }
  const SettledStep& e = ru.record->entries[at];
  // Whatever it reads was reused too: an upstream step that ran again may have made
  // other outputs, and then this step has another key.
  for (size_t dep : s.deps) {
    if (reused_from_[dep] < 0) return std::nullopt;
  }
  if (!ru.check->holds(e)) return std::nullopt;
  if (at >= ru.steps->text.size()) return std::nullopt;
  std::string_view entry = ru.steps->text[at];
  if (entry.size() < 2 || entry.front() != '{' || entry.back() != '}') return std::nullopt;
  // A step of a table whose bytes are the record's (and the file's head too) has the
  // recorded fingerprint: its definition is what it was.
  const bool same_table =
      s.spec < ru.same_tables.size() && ru.same_tables[s.spec] && e.table == s.spec;
  if (ru.verify_fingerprints && !same_table) {
    std::string fp = step_fingerprint(s, g_, tools);
    if (fp.empty() || fp != e.fingerprint) return std::nullopt;
    fingerprints_[i] = std::move(fp);
  }
  reused_from_[i] = static_cast<int64_t>(at);
  return entry;
}

std::optional<std::map<std::string, StepRecord::Output>> recorded_outputs(
    std::string_view entry, const std::vector<std::string>& want) {
  auto j = nlohmann::json::parse(entry, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("outputs") || !j["outputs"].is_object()) {
    return std::nullopt;
  }
  std::map<std::string, StepRecord::Output> outputs;
  for (const auto& item : j["outputs"].items()) {
    const nlohmann::json& o = item.value();
    if (!o.is_object()) return std::nullopt;
    auto field = [&o](const char* k) {
      return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
    };
    StepRecord::Output out{field("object"), field("form"), field("canonical")};
    if (!store::check_object_name(out.object).ok()) return std::nullopt;
    outputs[item.key()] = std::move(out);
  }
  for (const std::string& out : want) {
    if (!outputs.count(out)) return std::nullopt;
  }
  return outputs;
}

}  // namespace berth::pipeline
