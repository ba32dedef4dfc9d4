// Hostlist expand and compress (spec 01 §2).
//
// expand() parses the whole expression into items before producing a single name, so
// that every syntax error and the max_names bound are reported before anything large
// is allocated. compress() is one linear pass over the names with no per-name
// allocation, because it runs on every allocation berth discovers (10^5..10^6 names).
#include "alloc/hostlist.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include "util/strings.h"

namespace berth::alloc::hostlist {
namespace {

// 18 decimal digits always fit in uint64_t, so a range's count (hi - lo + 1) and hi + 1
// can never overflow.
constexpr size_t kMaxDigits = 18;

// One N or N-M inside a bracket group. `width` is the width names are padded to:
// Slurm uses the width of the first bound's text (hostlist.c, _parse_single_range),
// which pads only when that text has a leading zero or is as wide as the second bound.
struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;
};

// A piece of an item: literal text, or (when `ranges` is non-empty) a bracket group.
struct Piece {
  std::string_view literal;
  std::vector<Range> ranges;
};

struct Item {
  std::vector<Piece> pieces;
  bool has_group = false;
};

Failure invalid(size_t index, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("position {}: {}", index + 1, what));
}

// Control characters (and whitespace, which has its own message because a stray space
// from a shell or an env file is by far the common case) can never be part of a host
// name, and accepting them would smuggle them into every later message and file.
std::optional<Failure> check_char(std::string_view expr, size_t i) {
  char c = expr[i];
  if (str::is_space(c)) return invalid(i, "whitespace is not allowed in a hostlist");
  auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) {
    return invalid(
        i, fmt::format("control character '{}' is not allowed", str::printable(expr.substr(i, 1))));
  }
  return std::nullopt;
}

// Adds or multiplies, saturating at `cap`: counts only need to be exact up to
// max_names + 1, and saturation keeps a hostile "[0-999..][0-999..]" from overflowing.
uint64_t add_capped(uint64_t a, uint64_t b, uint64_t cap) {
  return (a >= cap || b >= cap - a) ? cap : a + b;
}
uint64_t mul_capped(uint64_t a, uint64_t b, uint64_t cap) {
  if (a == 0 || b == 0) return 0;
  return (a >= cap || b >= cap || a > cap / b) ? cap : a * b;
}

uint64_t group_size(const std::vector<Range>& ranges, uint64_t cap) {
  uint64_t n = 0;
  for (const Range& r : ranges) n = add_capped(n, r.hi - r.lo + 1, cap);
  return n;
}

// Appends `v` in decimal, left-padded with zeros to `width`. Two appends per number,
// not one per digit: this runs once per name, up to 10^6 times for one expression.
void append_number(std::string& out, uint64_t v, size_t width) {
  char buf[24];
  char* end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  size_t n = static_cast<size_t>(end - buf);
  if (width > n) out.append(width - n, '0');
  out.append(buf, n);
}

size_t decimal_width(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

class Parser {
 public:
  Parser(std::string_view expr, size_t max_names) : expr_(expr), max_names_(max_names) {}

  // Parses the whole expression; on success `total_` is the exact number of names.
  Result<std::vector<Item>> parse() {
    if (expr_.empty()) return invalid(0, "empty hostlist");
    std::vector<Item> items;
    for (;;) {
      Result<void> r = parse_item(items.emplace_back());
      if (!r.ok()) return r.error();
      if (i_ == expr_.size()) break;
      ++i_;  // the ',' that ended the item; a trailing one makes an empty item next
    }
    return items;
  }

  uint64_t total() const { return total_; }

 private:
  Result<void> parse_item(Item& item) {
    const size_t start = i_;
    size_t literal_start = i_;
    uint64_t count = 1;
    auto flush_literal = [&] {
      if (i_ > literal_start) {
        item.pieces.push_back(Piece{expr_.substr(literal_start, i_ - literal_start), {}});
      }
    };
    while (i_ < expr_.size() && expr_[i_] != ',') {
      char c = expr_[i_];
      if (c == ']') return invalid(i_, "']' without a matching '['");
      if (c == '[') {
        flush_literal();
        const size_t open = i_;
        Piece group;
        BERTH_CHECK(parse_group(group.ranges));
        item.has_group = true;
        count = mul_capped(count, group_size(group.ranges, cap()), cap());
        // Checked per group, before the next one is parsed: the error points at the
        // bracket that made the expression too large, and nothing has been allocated.
        if (add_capped(total_, count, cap()) > max_names_) return too_many(open);
        item.pieces.push_back(std::move(group));
        literal_start = i_;
        continue;
      }
      if (auto bad = check_char(expr_, i_)) return *bad;
      ++i_;
    }
    if (i_ == start) return invalid(start, "empty item");
    flush_literal();
    total_ = add_capped(total_, count, cap());
    if (total_ > max_names_) return too_many(start);
    return Ok{};
  }

  // Parses "[...]" with i_ on the '['; leaves i_ just past the ']'.
  Result<void> parse_group(std::vector<Range>& ranges) {
    const size_t open = i_++;
    if (i_ < expr_.size() && expr_[i_] == ']') return invalid(open, "empty bracket group '[]'");
    for (;;) {
      const size_t range_start = i_;
      BERTH_TRY(std::string_view lo_text, parse_number(open, "a digit"));
      std::string_view hi_text = lo_text;
      if (i_ < expr_.size() && expr_[i_] == '-') {
        ++i_;
        BERTH_TRY(std::string_view t, parse_number(open, "a digit after '-'"));
        hi_text = t;
      }
      Range r;
      r.lo = to_uint(lo_text);
      r.hi = to_uint(hi_text);
      r.width = lo_text.size();
      if (r.hi < r.lo) {
        return invalid(range_start, fmt::format("reversed range {}-{}", lo_text, hi_text));
      }
      ranges.push_back(r);
      if (i_ == expr_.size()) return invalid(open, "'[' is never closed");
      char c = expr_[i_];
      if (c == ']') {
        ++i_;
        return Ok{};
      }
      if (c == ',') {
        ++i_;
        continue;
      }
      if (c == '[') return invalid(i_, "nested '[' is not allowed");
      if (auto bad = check_char(expr_, i_)) return *bad;
      return invalid(i_, fmt::format("expected ',' or ']' after a range, found '{}'",
                                     str::printable(expr_.substr(i_, 1))));
    }
  }

  // Reads a run of digits at i_; `open` is the group's '[' for the unclosed message.
  Result<std::string_view> parse_number(size_t open, std::string_view expected) {
    const size_t start = i_;
    while (i_ < expr_.size() && str::is_digit(expr_[i_])) ++i_;
    if (i_ > start) {
      if (i_ - start > kMaxDigits) {
        return invalid(
            start, fmt::format("number '{}' is wider than {} digits",
                               str::printable(expr_.substr(start, i_ - start), 24), kMaxDigits));
      }
      return expr_.substr(start, i_ - start);
    }
    if (i_ == expr_.size()) return invalid(open, "'[' is never closed");
    char c = expr_[i_];
    if (c == ',' || c == ']') {
      return invalid(i_, fmt::format("empty range: expected {} before '{}'", expected, c));
    }
    if (c == '[') return invalid(i_, "nested '[' is not allowed");
    if (auto bad = check_char(expr_, i_)) return *bad;
    return invalid(
        i_, fmt::format("expected {}, found '{}'", expected, str::printable(expr_.substr(i_, 1))));
  }

  static uint64_t to_uint(std::string_view digits) {
    uint64_t v = 0;
    for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
    return v;
  }

  Failure too_many(size_t at) const {
    return invalid(at, fmt::format("expands to more than {} names", max_names_));
  }

  // Any count above max_names is as bad as any other; capping there keeps arithmetic
  // exact where it matters and overflow-free everywhere else.
  uint64_t cap() const { return static_cast<uint64_t>(max_names_) + 1; }

  std::string_view expr_;
  size_t max_names_;
  size_t i_ = 0;
  uint64_t total_ = 0;
};

// Hands every name of `item` to `out` in order: an odometer over its groups, leftmost
// group slowest, as Slurm expands "rack[1-2]-node[01-02]". `name` is the buffer each
// name is made in.
template <class Out>
void expand_item(const Item& item, std::string& name, Out&& out) {
  if (!item.has_group) {
    name.clear();
    for (const Piece& p : item.pieces) name += p.literal;
    out(name);
    return;
  }
  struct Cursor {
    size_t range = 0;
    uint64_t value = 0;
  };
  std::vector<Cursor> cursors(item.pieces.size());
  for (size_t k = 0; k < item.pieces.size(); ++k) {
    if (!item.pieces[k].ranges.empty()) cursors[k].value = item.pieces[k].ranges[0].lo;
  }
  for (;;) {
    name.clear();
    for (size_t k = 0; k < item.pieces.size(); ++k) {
      const Piece& p = item.pieces[k];
      if (p.ranges.empty()) {
        name += p.literal;
      } else {
        append_number(name, cursors[k].value, p.ranges[cursors[k].range].width);
      }
    }
    out(name);
    // Advance the rightmost group; carry into the one to its left when it wraps.
    size_t k = item.pieces.size();
    for (;;) {
      if (k == 0) return;
      --k;
      const std::vector<Range>& ranges = item.pieces[k].ranges;
      if (ranges.empty()) continue;
      Cursor& c = cursors[k];
      if (c.value < ranges[c.range].hi) {
        ++c.value;
        break;
      }
      if (c.range + 1 < ranges.size()) {
        c.value = ranges[++c.range].lo;
        break;
      }
      c = Cursor{0, ranges[0].lo};
    }
  }
}

// A name split around its rightmost run of digits: "rack1-node07x" is
// {"rack1-node", "07", "x"}. Runs wider than kMaxDigits cannot be written as a range,
// so such names (and names with no digits) have no number and stay literal.
struct Split {
  std::string_view prefix;
  std::string_view digits;
  std::string_view suffix;
  uint64_t value = 0;
};

std::optional<Split> split_name(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && !str::is_digit(name[end - 1])) --end;
  if (end == 0) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && str::is_digit(name[begin - 1])) --begin;
  if (end - begin > kMaxDigits) return std::nullopt;
  Split s;
  s.prefix = name.substr(0, begin);
  s.digits = name.substr(begin, end - begin);
  s.suffix = name.substr(end);
  for (char c : s.digits) s.value = s.value * 10 + static_cast<uint64_t>(c - '0');
  return s;
}

}  // namespace

// The expression's own copy, and its items, whose literals point into that copy.
struct Names::Parsed {
  std::string expr;
  std::vector<Item> items;
  size_t total = 0;
};

size_t Names::size() const { return parsed_ ? parsed_->total : 0; }

void Names::for_each(const std::function<void(std::string_view)>& fn) const {
  if (!parsed_) return;
  std::string name;
  for (const Item& item : parsed_->items) expand_item(item, name, fn);
}

Result<Names> parse(std::string_view expr, size_t max_names) {
  auto parsed = std::make_shared<Names::Parsed>();
  parsed->expr = std::string(expr);
  Parser parser(parsed->expr, max_names);
  BERTH_TRY(parsed->items, parser.parse());
  parsed->total = static_cast<size_t>(parser.total());
  Names names;
  names.parsed_ = std::move(parsed);
  return names;
}

Result<std::vector<std::string>> expand(std::string_view expr, size_t max_names) {
  Parser parser(expr, max_names);
  BERTH_TRY(std::vector<Item> items, parser.parse());
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(parser.total()));
  std::string name;
  for (const Item& item : items) {
    expand_item(item, name, [&names](const std::string& n) { names.push_back(n); });
  }
  return names;
}

Result<size_t> count(std::string_view expr, size_t max_names) {
  Parser parser(expr, max_names);
  BERTH_TRY(std::vector<Item> items, parser.parse());
  (void)items;  // parsing is the whole check; only the total is wanted
  return static_cast<size_t>(parser.total());
}

std::string compress(const std::vector<std::string>& names) {
  std::string out;
  // A run of names sharing prefix and suffix becomes one bracket group; within it, a
  // range grows while the next number is hi + 1 and is written exactly as the range's
  // padding would write it. That is looser than "same digit count": n9,n10 is n[9-10]
  // and n098..n100 is n[098-100], both of which expand back to the same text (Slurm's
  // _width_equiv makes the same call), while n9,n010 stays two ranges.
  struct Run {
    std::string_view lo;
    std::string_view hi;
    uint64_t lo_value;
    uint64_t hi_value;
    size_t width;
  };
  std::vector<Run> runs;
  size_t i = 0;
  while (i < names.size()) {
    if (!out.empty()) out += ',';
    std::optional<Split> first = split_name(names[i]);
    if (!first) {
      // Emitted verbatim: names from expand() always expand back to themselves; names
      // that contain ',', '[' or ']' cannot, and compress() has no way to fail.
      out += names[i++];
      continue;
    }
    runs.clear();
    runs.push_back(
        Run{first->digits, first->digits, first->value, first->value, first->digits.size()});
    size_t j = i + 1;
    for (; j < names.size(); ++j) {
      std::optional<Split> s = split_name(names[j]);
      if (!s || s->prefix != first->prefix || s->suffix != first->suffix) break;
      Run& last = runs.back();
      if (s->value == last.hi_value + 1 &&
          s->digits.size() == std::max(last.width, decimal_width(s->value))) {
        last.hi = s->digits;
        last.hi_value = s->value;
      } else {
        runs.push_back(Run{s->digits, s->digits, s->value, s->value, s->digits.size()});
      }
    }
    if (j == i + 1) {
      out += names[i];
    } else {
      out += first->prefix;
      out += '[';
      for (size_t k = 0; k < runs.size(); ++k) {
        if (k) out += ',';
        out += runs[k].lo;
        if (runs[k].hi_value != runs[k].lo_value) {
          out += '-';
          out += runs[k].hi;
        }
      }
      out += ']';
      out += first->suffix;
    }
    i = j;
  }
  return out;
}

}  // namespace berth::alloc::hostlist
