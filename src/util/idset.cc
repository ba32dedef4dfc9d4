#include "util/idset.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace berth::idset {
namespace {

// A range as written, with the 1-based position of its element for messages.
struct Element {
  Range range;
  size_t pos = 0;
};

Failure error_at(size_t pos, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("position {}: {}", pos, what));
}

// Reads one id from text[i...] (i is advanced past it); `base` is the 1-based position
// of text[0] in the caller's input.
Result<int64_t> read_id(std::string_view text, size_t& i, size_t base, int64_t max_id) {
  if (i >= text.size() || !str::is_digit(text[i])) {
    if (i >= text.size()) return error_at(base + i, "expected a digit, found the end");
    return error_at(base + i,
                    fmt::format("expected a digit, found '{}'", str::printable(text.substr(i, 1))));
  }
  size_t start = i;
  int64_t v = 0;
  for (; i < text.size() && str::is_digit(text[i]); ++i) {
    int64_t d = text[i] - '0';
    // Checked before multiplying, so a thousand digits cannot overflow.
    if (v > max_id / 10 || (v == max_id / 10 && d > max_id % 10)) {
      return error_at(base + start, fmt::format("id is larger than {}", max_id));
    }
    v = v * 10 + d;
  }
  return v;
}

}  // namespace

Result<std::vector<Range>> parse(std::string_view text, int64_t max_id) {
  size_t base = 1;  // 1-based position of body[0] in text
  std::string_view body = text;
  if (!body.empty() && body.front() == '[') {
    if (body.back() != ']' || body.size() < 2) {
      return error_at(1, "'[' without a closing ']'");
    }
    body = body.substr(1, body.size() - 2);
    base = 2;
  }
  std::vector<Element> elems;
  if (!body.empty()) {
    size_t start = 0;
    for (std::string_view item : str::split(body, ',')) {
      size_t pos = base + start;
      start += item.size() + 1;
      if (item.empty()) return error_at(pos, "empty element");
      size_t i = 0;
      BERTH_TRY(int64_t first, read_id(item, i, pos, max_id));
      int64_t last = first;
      if (i < item.size() && item[i] == '-') {
        ++i;
        BERTH_TRY(last, read_id(item, i, pos, max_id));
        if (last < first) {
          return error_at(pos, fmt::format("reversed range {}-{}", first, last));
        }
      }
      if (i < item.size() && item[i] == ':') {
        return error_at(pos + i, "the kernel's stride form 'A-B:N/M' is not accepted");
      }
      if (i < item.size()) {
        return error_at(pos + i, fmt::format("expected ',' or '-', found '{}'",
                                             str::printable(item.substr(i, 1))));
      }
      elems.push_back({{first, last}, pos});
    }
  }

  // Any order is accepted; sorting first makes the overlap check one pass. Equal starts
  // stay in input order, so a repeat is reported where it is first repeated.
  std::sort(elems.begin(), elems.end(), [](const Element& a, const Element& b) {
    return a.range.first != b.range.first ? a.range.first < b.range.first : a.pos < b.pos;
  });
  std::vector<Range> out;
  for (size_t k = 0; k < elems.size(); ++k) {
    const Range& r = elems[k].range;
    if (k > 0 && r.first <= elems[k - 1].range.last) {
      // Name the element written later in the input: that is where a reader looks.
      size_t pos = std::max(elems[k].pos, elems[k - 1].pos);
      int64_t dup = r.first;
      return error_at(pos, fmt::format("id {} is given twice", dup));
    }
    if (!out.empty() && out.back().last + 1 == r.first) {
      out.back().last = r.last;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

Result<std::vector<int>> parse_ids(std::string_view text, int max_id) {
  BERTH_TRY(std::vector<Range> ranges, parse(text, max_id));
  // The ranges are disjoint and bounded by max_id, so this is at most max_id + 1 ids.
  std::vector<int> ids;
  ids.reserve(static_cast<size_t>(count(ranges)));
  for (const Range& r : ranges) {
    for (int64_t id = r.first; id <= r.last; ++id) ids.push_back(static_cast<int>(id));
  }
  return ids;
}

int64_t count(const std::vector<Range>& ranges) {
  int64_t n = 0;
  for (const Range& r : ranges) n += r.last - r.first + 1;
  return n;
}

std::string encode(const std::vector<Range>& ranges) {
  std::string out;
  for (const Range& r : ranges) {
    if (!out.empty()) out += ',';
    out += r.first == r.last ? fmt::format("{}", r.first) : fmt::format("{}-{}", r.first, r.last);
  }
  return out;
}

std::string encode_ids(const std::vector<int>& ids) {
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

}  // namespace berth::idset
