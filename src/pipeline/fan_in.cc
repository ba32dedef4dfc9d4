// Fan-in references (fan_in.h, spec 04 §3.6).
#include "pipeline/fan_in.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

constexpr std::string_view kPatternChars = "*?[";

// Every step's name, sorted, for finding the names a pattern's literal prefix allows
// without matching the pattern against every step: 10^4 per-sample merges over 10^5
// steps would otherwise be 10^9 fnmatch calls.
class NameTable {
 public:
  explicit NameTable(const std::vector<Step>& steps) {
    names_.reserve(steps.size());
    for (size_t i = 0; i < steps.size(); ++i) names_.emplace_back(steps[i].name, i);
    std::sort(names_.begin(), names_.end());
  }

  // The indices of the steps `pattern` matches, ascending (expansion order).
  std::vector<size_t> match(const std::string& pattern) const {
    size_t literal = pattern.find_first_of("*?[\\");
    std::string_view prefix = std::string_view(pattern).substr(0, literal);
    auto it = std::lower_bound(names_.begin(), names_.end(),
                               std::pair<std::string_view, size_t>(prefix, 0));
    std::vector<size_t> out;
    for (; it != names_.end() && it->first.starts_with(prefix); ++it) {
      if (::fnmatch(pattern.c_str(), std::string(it->first).c_str(), 0) == 0) {
        out.push_back(it->second);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::vector<std::pair<std::string_view, size_t>> names_;
};

}  // namespace

bool is_fan_in(std::string_view reference) {
  if (!reference.starts_with('@')) return false;
  size_t slash = reference.rfind('/');
  if (slash == std::string_view::npos) return false;
  return reference.substr(1, slash - 1).find_first_of(kPatternChars) != std::string_view::npos;
}

Result<void> expand_fan_ins(
    std::vector<Step>& steps,
    const std::function<std::string(const Step&, const std::string& input)>& origin) {
  std::optional<NameTable> table;
  for (Step& st : steps) {
    for (auto& [name, input] : st.inputs) {
      bool any = std::any_of(input.items.begin(), input.items.end(), [](const InputItem& item) {
        return item.kind == InputItem::Kind::kStepOutput && is_fan_in(item.text);
      });
      if (!any) continue;
      if (!table) table.emplace(steps);
      std::vector<InputItem> items;
      for (InputItem& item : input.items) {
        if (item.kind != InputItem::Kind::kStepOutput || !is_fan_in(item.text)) {
          items.push_back(std::move(item));
          continue;
        }
        size_t slash = item.text.rfind('/');
        std::string pattern = item.text.substr(1, slash - 1);
        std::string output = item.text.substr(slash + 1);
        std::vector<size_t> found = table->match(pattern);
        if (found.empty()) {
          return fail(Errc::kNotFound,
                      fmt::format("{}: inputs.{}: '{}' matches no step", origin(st, name), name,
                                  str::printable(item.text)));
        }
        for (size_t i : found) {
          const Step& from = steps[i];
          if (std::find(from.outputs.begin(), from.outputs.end(), output) == from.outputs.end()) {
            return fail(Errc::kNotFound,
                        fmt::format("{}: inputs.{}: '{}' matches step '{}', which has no "
                                    "output '{}' (it has: {})",
                                    origin(st, name), name, str::printable(item.text), from.name,
                                    str::printable(output),
                                    from.outputs.empty() ? "none" : str::join(from.outputs, ", ")));
          }
          InputItem one;
          one.kind = InputItem::Kind::kStepOutput;
          one.text = fmt::format("@{}/{}", from.name, output);
          items.push_back(std::move(one));
        }
      }
      input.items = std::move(items);
    }
  }
  return Ok{};
}

}  // namespace berth::pipeline
