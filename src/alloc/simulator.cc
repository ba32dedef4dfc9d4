// The simulator (spec 01 §2.6): --simulate "3x4,2x8" fabricates an allocation of 3
// nodes with 4 slots, then 2 with 8, so that placement and display can be exercised at
// any scale on a laptop. It outranks every other source, because asking for it is
// asking to ignore whatever allocation is really there.
//
// Nodes are named sim1..simN, zero-padded to the width of N ("sim01".."sim12") so that
// they sort, compress and display in allocation order. Their slots are given: the
// simulated count is the whole point, and must not be replaced by the local core count.
#include <fmt/format.h>

#include "alloc/source.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

// 10^7 nodes is two orders of magnitude above the largest machine, and still only about
// a gigabyte of NodeSpecs; anything larger is a typo.
constexpr uint64_t kMaxNodes = 10'000'000;
constexpr uint64_t kMaxSlots = INT32_MAX;

struct Group {
  uint64_t nodes = 0;
  int64_t slots = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view origin, uint64_t max_nodes)
      : text_(text), origin_(origin), max_nodes_(max_nodes) {}

  Result<std::vector<Group>> parse() {
    if (text_.empty()) return error(0, "empty: expected NODESxSLOTS, e.g. 3x4,2x8");
    std::vector<Group> groups;
    uint64_t total = 0;
    size_t start = 0;
    for (;;) {
      size_t end = text_.find(',', start);
      if (end == std::string_view::npos) end = text_.size();
      BERTH_TRY(Group g, group(start, text_.substr(start, end - start)));
      total += g.nodes;  // each term is <= max_nodes_, so this cannot overflow
      if (total > max_nodes_) {
        return error(start, fmt::format("more than {} nodes in all", max_nodes_));
      }
      groups.push_back(g);
      if (end == text_.size()) return groups;
      start = end + 1;
    }
  }

 private:
  Failure error(size_t offset, std::string_view what) const {
    return fail(Errc::kInvalidInput, fmt::format("{}: position {}: {}", origin_, offset + 1, what));
  }

  // "NxS" starting at 0-based `at`.
  Result<Group> group(size_t at, std::string_view item) {
    if (item.empty()) {
      return error(at, "empty item (two commas in a row, or a comma at an end)");
    }
    size_t x = item.find_first_of("xX");
    if (x == std::string_view::npos) {
      return error(at, fmt::format("'{}' is not NODESxSLOTS (e.g. 3x4)", str::printable(item)));
    }
    Group g;
    BERTH_TRY(uint64_t nodes, number(at, item.substr(0, x), max_nodes_, "node count"));
    BERTH_TRY(uint64_t slots, number(at + x + 1, item.substr(x + 1), kMaxSlots, "slot count"));
    g.nodes = nodes;
    g.slots = static_cast<int64_t>(slots);
    return g;
  }

  // A decimal in [1, max] at 0-based `at`, with the position of the first bad byte.
  Result<uint64_t> number(size_t at, std::string_view digits, uint64_t max,
                          std::string_view what) const {
    if (digits.empty()) return error(at, fmt::format("expected a {}", what));
    for (size_t i = 0; i < digits.size(); ++i) {
      if (!str::is_digit(digits[i])) {
        return error(at + i, fmt::format("{}: expected a digit, found '{}'", what,
                                         str::printable(digits.substr(i, 1))));
      }
    }
    auto v = str::parse_uint(digits, max);
    // `*v > max` again because parse_uint's overflow test wraps for a max below 9.
    if (!v.ok() || *v == 0 || *v > max) {
      return error(at, fmt::format("{} '{}' is out of range: expected 1 to {}", what,
                                   str::printable(digits), max));
    }
    return *v;
  }

  std::string_view text_;
  std::string_view origin_;
  uint64_t max_nodes_;
};

size_t decimal_width(uint64_t v) {
  size_t n = 1;
  for (; v >= 10; v /= 10) ++n;
  return n;
}

}  // namespace

namespace internal {
// parse_simulate with its bound as a parameter, so that tests and the fuzzer can reach it
// without fabricating a gigabyte of nodes.
Result<std::vector<NodeSpec>> parse_simulate(std::string_view text, std::string_view origin,
                                             uint64_t max_nodes) {
  BERTH_TRY(std::vector<Group> groups, Parser(text, origin, max_nodes).parse());
  uint64_t total = 0;
  for (const Group& g : groups) total += g.nodes;
  const size_t width = decimal_width(total);
  std::vector<NodeSpec> out;
  out.reserve(static_cast<size_t>(total));
  uint64_t index = 0;
  for (const Group& g : groups) {
    for (uint64_t i = 0; i < g.nodes; ++i) {
      NodeSpec s;
      s.name = fmt::format("sim{:0{}}", ++index, width);
      s.slots = g.slots;
      s.slots_given = true;
      out.push_back(std::move(s));
    }
  }
  return out;
}
}  // namespace internal

Result<std::vector<NodeSpec>> parse_simulate(std::string_view text, std::string_view origin) {
  return internal::parse_simulate(text, origin, kMaxNodes);
}

SourceResult discover_simulator(const Input& in) {
  if (!in.options.simulate) return std::optional<Found>();
  BERTH_TRY(std::vector<NodeSpec> nodes, parse_simulate(*in.options.simulate, "--simulate"));
  return std::optional<Found>(Found::listed(std::move(nodes)));
}

}  // namespace berth::alloc
