#include "pipeline/methods.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::json;

std::string field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "unknown";
}

// "A", "A and B", "A, B and C".
std::string and_list(const std::vector<std::string>& items) {
  if (items.empty()) return "";
  if (items.size() == 1) return items[0];
  std::vector<std::string> head(items.begin(), items.end() - 1);
  return str::join(head, ", ") + " and " + items.back();
}

// Each name, with its share of the outputs when there is more than one name.
std::string counted(const std::map<std::string, size_t>& m) {
  std::vector<std::string> out;
  for (const auto& [name, n] : m) {
    out.push_back(m.size() == 1 ? name : fmt::format("{} ({} output{})", name, n, n == 1 ? "" : "s"));
  }
  return and_list(out);
}

}  // namespace

std::string methods_paragraph(std::string_view pipeline, const std::vector<std::string>& rows) {
  std::map<std::string, size_t> engines, platforms, gpus;
  std::map<std::string, std::string> tools;  // name -> first line of its version
  size_t outputs = 0, unreadable = 0;
  for (const std::string& text : rows) {
    json r = json::parse(text, nullptr, false);
    if (r.is_discarded() || !r.is_object() || !r.contains("provenance") ||
        !r["provenance"].is_object() || !r.contains("outputs") || !r["outputs"].is_object()) {
      ++unreadable;
      continue;
    }
    const json& p = r["provenance"];
    size_t n = r["outputs"].size();
    outputs += n;
    engines[field(p, "engine_version")] += n;
    platforms[field(p, "platform")] += n;
    // The GPU models it ran on, one count per output, as for platforms.
    if (p.contains("gpu_devices") && p["gpu_devices"].is_array()) {
      std::set<std::string> models;
      for (const auto& d : p["gpu_devices"]) {
        if (d.is_object() && d.contains("model") && d["model"].is_string()) {
          std::string m = d["model"].get<std::string>();
          if (d.contains("driver") && d["driver"].is_string()) {
            m += " (driver " + d["driver"].get<std::string>() + ")";
          }
          models.insert(std::move(m));
        }
      }
      for (const auto& m : models) gpus[m] += n;
    }
    if (p.contains("tools") && p["tools"].is_object()) {
      for (auto& [name, version] : p["tools"].items()) {
        std::string v = version.is_string() ? version.get<std::string>() : "";
        tools.emplace(name, std::string(str::trim(v.substr(0, v.find('\n')))));
      }
    }
  }
  std::vector<std::string> tool_list;
  for (const auto& [name, v] : tools) tool_list.push_back(v.empty() ? name : name + " (" + v + ")");
  std::string text = fmt::format(
      "The {} output(s) of pipeline '{}' were computed with {} on {}{}. Every result is stored "
      "under the SHA-256 of its bytes and keyed by the hash of its command, parameters, "
      "inputs' canonical hashes and tool versions, so that each can be traced to exactly what "
      "produced it.",
      outputs, pipeline, engines.empty() ? "an unknown engine" : counted(engines),
      platforms.empty() ? "an unknown platform" : counted(platforms),
      tool_list.empty() ? "" : ", using " + and_list(tool_list));
  if (!gpus.empty()) text += fmt::format(" GPUs used: {}.", counted(gpus));
  if (unreadable) {
    text += fmt::format(" The provenance of {} step(s) could not be read and is not described.",
                        unreadable);
  }
  return text + "\n";
}

}  // namespace berth::pipeline
