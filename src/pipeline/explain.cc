// Explainer (explain.h).
#include "pipeline/explain.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <vector>

#include "util/strings.h"

namespace berth::pipeline {

using json = nlohmann::ordered_json;

namespace {

// A value's text for a message: short, printable.
std::string shown(const json& v) {
  return v.is_string() ? str::printable(v.get<std::string>(), 40) : std::string("?");
}

// Each entry of the basis's object `field` (name -> text) that differs between the
// earlier basis `a` and `b`: "param 'rate' changed (0.1 -> 0.01)", "... is new",
// "... was removed".
void changed_values(const json& a, const json& b, const char* field, const char* what,
                    std::vector<std::string>& why) {
  const json none = json::object();
  const json& was = a.contains(field) && a[field].is_object() ? a[field] : none;
  const json& now = b.contains(field) && b[field].is_object() ? b[field] : none;
  for (const auto& [name, v] : now.items()) {
    if (!was.contains(name)) {
      why.push_back(fmt::format("{} '{}' is new ({})", what, name, shown(v)));
    } else if (was[name] != v) {
      why.push_back(fmt::format("{} '{}' changed ({} -> {})", what, name, shown(was[name]),
                                shown(v)));
    }
  }
  for (const auto& [name, v] : was.items()) {
    if (!now.contains(name)) why.push_back(fmt::format("{} '{}' was removed", what, name));
  }
}

}  // namespace

std::string Explainer::why(const std::string& step, std::string_view basis) {
  // The first few steps to explain are looked up one by one; past that, or for one the
  // quick look-up does not find, the previous report is parsed once, whole.
  constexpr int kQuickLookups = 16;
  std::optional<std::string> quick;
  if (previous_.given.empty() && previous_.find && !loaded_ && quick_lookups_ < kQuickLookups) {
    ++quick_lookups_;
    quick = previous_.find(step);
  }
  if (!quick && !loaded_) {
    loaded_ = true;
    if (previous_.given.empty() && previous_.load) loaded_previous_ = previous_.load();
  }
  const auto& previous = previous_.given.empty() ? loaded_previous_ : previous_.given;
  auto prev = previous.find(step);
  if (!quick && prev == previous.end()) return "new: no earlier run of this step is recorded here";
  json a = json::parse(quick ? *quick : prev->second, nullptr, false);
  json b = json::parse(basis, nullptr, false);
  if (a.is_discarded() || !a.is_object() || b.is_discarded() || !b.is_object()) {
    return "new: the earlier run's record of this step is unreadable";
  }
  std::vector<std::string> why;
  // What was written differently, by name, old -> new: a param, a [config] value.
  const size_t named = why.size();
  changed_values(a, b, "params", "param", why);
  changed_values(a, b, "config", "config", why);
  const bool values_changed = why.size() > named;
  if (a.value("command", "") != b.value("command", "")) {
    // A value the command holds changed it: said as the value, not again as the command.
    if (!values_changed) why.push_back("its command changed");
  } else if (a.value("recipe", "") != b.value("recipe", "") && !values_changed) {
    why.push_back("its params, environment or outputs changed");
  }
  const json& ai = a.contains("inputs") && a["inputs"].is_object() ? a["inputs"] : json::object();
  for (auto& [name, items] : b["inputs"].items()) {
    if (!ai.contains(name)) {
      why.push_back(fmt::format("input '{}' is new", name));
    } else if (ai[name] != items) {
      std::vector<std::string> what;
      for (size_t k = 0; k < items.size(); ++k) {
        if (k >= ai[name].size() || ai[name][k] != items[k]) {
          what.push_back(items[k][0].get<std::string>());
        }
      }
      why.push_back(what.empty()
                        ? fmt::format("input '{}' changed", name)
                        : fmt::format("input '{}' changed ({})", name, str::join(what, ", ")));
    }
  }
  const json& at = a.contains("tools") && a["tools"].is_object() ? a["tools"] : json::object();
  for (auto& [name, v] : b["tools"].items()) {
    if (!at.contains(name) || at[name] != v) why.push_back(fmt::format("tool '{}' changed", name));
  }
  if (why.empty()) return "its result is not in the store (never published, or removed)";
  return str::join(why, "; ");
}

}  // namespace berth::pipeline
