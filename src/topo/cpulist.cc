#include "topo/cpulist.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "util/strings.h"

namespace berth::topo {
namespace {

Failure error_at(size_t pos, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("position {}: {}", pos, what));
}

// Reads one id at item[i...], advancing i; `pos` is item[0]'s 1-based position.
Result<int> read_id(std::string_view item, size_t& i, size_t pos, int max_id) {
  if (i >= item.size()) return error_at(pos + i, "expected a digit, found the end");
  if (!str::is_digit(item[i])) {
    return error_at(pos + i,
                    fmt::format("expected a digit, found '{}'", str::printable(item.substr(i, 1))));
  }
  size_t start = i;
  int64_t v = 0;
  for (; i < item.size() && str::is_digit(item[i]); ++i) {
    // v <= max_id before each step, so v * 10 + 9 cannot overflow 64 bits however
    // many digits follow.
    v = v * 10 + (item[i] - '0');
    if (v > max_id) return error_at(pos + start, fmt::format("CPU id is larger than {}", max_id));
  }
  return static_cast<int>(v);
}

}  // namespace

Result<std::vector<int>> parse_cpulist(std::string_view text, int max_id) {
  std::string_view body = str::trim(text);
  size_t base = static_cast<size_t>(body.data() - text.data()) + 1;
  std::vector<int> ids;
  if (body.empty()) return ids;
  std::vector<std::pair<int, int>> ranges;
  size_t offset = 0;
  for (std::string_view item : str::split(body, ',')) {
    size_t pos = base + offset;
    offset += item.size() + 1;
    if (item.empty()) return error_at(pos, "empty element");
    size_t i = 0;
    BERTH_TRY(int first, read_id(item, i, pos, max_id));
    int last = first;
    if (i < item.size() && item[i] == '-') {
      ++i;
      BERTH_TRY(last, read_id(item, i, pos, max_id));
      if (last < first) return error_at(pos, fmt::format("reversed range {}-{}", first, last));
    }
    if (i < item.size() && item[i] == ':') {
      return error_at(pos + i, "the stride form 'A-B:N/M' is not a sysfs list");
    }
    if (i < item.size()) {
      return error_at(pos + i, fmt::format("expected ',' or '-', found '{}'",
                                           str::printable(item.substr(i, 1))));
    }
    ranges.emplace_back(first, last);
  }
  // Merging the ranges before expanding them bounds the work by max_id, however
  // many times the input repeats itself.
  std::sort(ranges.begin(), ranges.end());
  int next = -1;  // every id below `next` has been emitted
  for (auto [first, last] : ranges) {
    for (int c = std::max(first, next); c <= last; ++c) ids.push_back(c);
    next = std::max(next, last + 1);
  }
  return ids;
}

std::string encode_cpulist(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += i == j ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace berth::topo
