// The previous basis of a step (previous_basis.h).
#include "pipeline/previous_basis.h"

#include <string_view>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "pipeline/report.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {

std::map<std::string, std::string> previous_bases(const std::string& report_path) {
  std::map<std::string, std::string> out;
  auto text = files::read_file(report_path);
  if (!text.ok()) return out;
  // Only each step's name and basis are kept while parsing: the rest of a 10,000-step
  // report (outputs, reasons, times) is megabytes nobody reads here.
  using json = nlohmann::json;
  auto keep = [](int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key) return true;
    if (depth == 1) return parsed == "steps";
    if (depth == 3) return parsed == "name" || parsed == "basis";
    return true;
  };
  if (str::json_deeper_than(*text, kMaxReportDepth)) return out;
  auto j = json::parse(*text, keep, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("steps") || !j["steps"].is_array()) {
    return out;
  }
  for (const auto& s : j["steps"]) {
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string()) continue;
    if (!s.contains("basis") || !s["basis"].is_object()) continue;
    out[s["name"].get<std::string>()] = s["basis"].dump();
  }
  return out;
}


std::function<std::optional<std::string>(const std::string& step)> previous_basis_finder(
    std::string report_path, std::shared_ptr<const RecordedEntries> recorded,
    const Settled* record) {
  auto previous_text = std::make_shared<std::optional<std::string>>();
  // The record's entries by step name, made at the first question: a run that keys
  // every step again (a tool's version changed) asks once per step.
  auto by_name = std::make_shared<std::unordered_map<std::string_view, size_t>>();
  return [report_path = std::move(report_path), previous_text, recorded, record,
          by_name](const std::string& step) -> std::optional<std::string> {
    if (recorded && record) {
      size_t n = std::min(record->entries.size(), recorded->text.size());
      if (by_name->empty() && n > 0) {
        by_name->reserve(n);
        for (size_t k = 0; k < n; ++k) by_name->emplace(record->entries[k].name, k);
      }
      if (auto k = by_name->find(step); k != by_name->end()) {
        if (auto basis = find_step_basis(recorded->text[k->second], step)) return basis;
      }
    }
    if (!*previous_text) {
      auto t = files::read_file(report_path);
      *previous_text = t.ok() ? std::move(*t) : std::string();
    }
    return find_step_basis(**previous_text, step);
  };
}

}  // namespace berth::pipeline
