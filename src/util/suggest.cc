// Closest-name suggestions (suggest.h).
#include "util/suggest.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace berth::str {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic programme: the swap of two neighbours looks two back.
  std::vector<size_t> two(b.size() + 1), one(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) one[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({one[j] + 1, cur[j - 1] + 1, one[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], two[j - 2] + 1);
      }
    }
    std::swap(two, one);
    std::swap(one, cur);
  }
  return one[b.size()];
}

std::optional<std::string> closest(std::string_view name,
                                   const std::vector<std::string_view>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (std::string_view c : candidates) {
    if (c == name) return std::nullopt;
    // Names far apart in length cannot be close: skip the programme for them.
    size_t longer = std::max(c.size(), name.size());
    size_t limit = std::clamp<size_t>(longer / 3, 1, 3);
    size_t gap = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (gap > limit) continue;
    size_t d = edit_distance(name, c);
    if (d <= limit && (!best || d < best_distance)) {
      best = std::string(c);
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& candidates) {
  auto c = closest(name, candidates);
  return c ? fmt::format(" (did you mean '{}'?)", printable(*c)) : std::string();
}

}  // namespace berth::str
