// Slurm's per-node count lists (spec 01 §2.2).
//
// Parsed in two passes, like the hostlist: the first checks the syntax and sums the
// repeats, so the vector is allocated once, at its final size, and only after the
// total is known to be within max_items.
#include "alloc/tasks_per_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "util/strings.h"

namespace berth::alloc {
namespace {

constexpr uint64_t kMaxCount = 2147483647;  // 2^31-1: Slurm keeps these in uint16/32

Failure invalid(size_t index, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("position {}: {}", index + 1, what));
}

// What was found at `i`, for "expected X, found Y" messages.
std::string found(std::string_view text, size_t i) {
  if (i == text.size()) return "end of input";
  return fmt::format("'{}'", str::printable(text.substr(i, 1)));
}

class Parser {
 public:
  Parser(std::string_view text, size_t max_items) : text_(text), max_items_(max_items) {}

  // {count, repeat} per item, with the sum of repeats known to be <= max_items.
  Result<std::vector<std::pair<int64_t, uint64_t>>> parse() {
    if (text_.empty()) return invalid(0, "empty list");
    std::vector<std::pair<int64_t, uint64_t>> items;
    uint64_t total = 0;
    for (;;) {
      const size_t start = i_;
      if (i_ == text_.size() || text_[i_] == ',') return invalid(i_, "empty item");
      BERTH_TRY(uint64_t count, parse_number("a count"));
      if (count > kMaxCount) {
        return invalid(start,
                       fmt::format("count {} is larger than {}",
                                   str::printable(text_.substr(start, i_ - start)), kMaxCount));
      }
      uint64_t repeat = 1;
      if (i_ < text_.size() && text_[i_] == '(') {
        ++i_;
        if (i_ == text_.size() || text_[i_] != 'x') {
          return expected("'x' after '('");
        }
        ++i_;
        const size_t repeat_start = i_;
        BERTH_TRY(uint64_t r, parse_number("a repeat count after 'x'"));
        if (r == 0) return invalid(repeat_start, "repeat count must be at least 1");
        if (i_ == text_.size()) return invalid(i_, "missing ')'");
        if (text_[i_] != ')') return expected("')'");
        ++i_;
        repeat = r;
      }
      // repeat is at most UINT64_MAX (parse_number saturates), so compare before adding.
      if (repeat > max_items_ - std::min<uint64_t>(total, max_items_)) {
        return invalid(start, fmt::format("expands to more than {} items", max_items_));
      }
      total += repeat;
      items.emplace_back(static_cast<int64_t>(count), repeat);
      if (i_ == text_.size()) return items;
      if (text_[i_] != ',') return expected("',' or the end after an item");
      ++i_;
    }
  }

 private:
  // Reads a run of decimal digits, saturating at UINT64_MAX: any value that large is
  // already out of range for a count or a repeat, so the exact value is not needed.
  Result<uint64_t> parse_number(std::string_view what) {
    const size_t start = i_;
    uint64_t v = 0;
    while (i_ < text_.size() && str::is_digit(text_[i_])) {
      uint64_t d = static_cast<uint64_t>(text_[i_] - '0');
      v = (v > (UINT64_MAX - d) / 10) ? UINT64_MAX : v * 10 + d;
      ++i_;
    }
    if (i_ == start) return expected(what);
    return v;
  }

  Failure expected(std::string_view what) const {
    if (i_ < text_.size() && str::is_space(text_[i_])) {
      return invalid(i_, "whitespace is not allowed");
    }
    return invalid(i_, fmt::format("expected {}, found {}", what, found(text_, i_)));
  }

  std::string_view text_;
  size_t max_items_;
  size_t i_ = 0;
};

}  // namespace

Result<std::vector<int64_t>> parse_tasks_per_node(std::string_view text, size_t max_items) {
  Parser parser(text, max_items);
  BERTH_TRY(auto items, parser.parse());
  size_t total = 0;
  for (const auto& item : items) total += static_cast<size_t>(item.second);
  std::vector<int64_t> counts;
  counts.reserve(total);
  for (const auto& [count, repeat] : items) counts.insert(counts.end(), repeat, count);
  return counts;
}

}  // namespace berth::alloc
