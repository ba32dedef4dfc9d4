// The settled record's reader (settled_codec.cc, spec 04 §7.1): a cursor over the
// record's bytes, on whose primitives the codec's line parsers are written. Only the
// codec includes it; it is a file of its own because what keeps decoding fast and its
// failures exact lives here, apart from the grammar.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace berth::pipeline {

// The text of a decoding failure: the byte offset and the line it stopped at (0: not
// known, for a reader started in the middle of a record) and what it found wrong there.
inline Error settled_record_error(size_t at, size_t line, std::string_view what) {
  std::string m = fmt::format("settled record: at byte {}: {}", at, what);
  if (line > 0) m += fmt::format(" (line {})", line);
  return Error(Errc::kInvalidInput, std::move(m));
}

// A cursor over the record, with the codec's one parser per line kind written on its
// primitives. A primitive returns false on anything unexpected and notes what it
// expected and where, in a few stores; the message is made from that note only when
// the decoder reports the failure (error()). A record of 10^5 steps is decoded on every
// rerun, and its well-formed lines must cost no formatting.
class SettledReader {
 public:
  // `line`: the line `pos` lies on, 0 when it is not known.
  explicit SettledReader(std::string_view b, size_t pos = 0, size_t line = 1)
      : b_(b), pos_(pos), line_(line) {}

  size_t pos() const { return pos_; }
  size_t line() const { return line_; }
  bool at_end() const { return pos_ == b_.size(); }

  // The next word up to a space or newline (not consumed).
  std::string_view peek_word() const {
    size_t end = pos_;
    while (end < b_.size() && b_[end] != ' ' && b_[end] != '\n') ++end;
    return b_.substr(pos_, end - pos_);
  }

  bool lit(std::string_view s) {
    if (b_.substr(pos_, s.size()) != s) return expected(Want::kLiteral, s);
    pos_ += s.size();
    return true;
  }
  bool space() {
    if (pos_ < b_.size() && b_[pos_] == ' ') return ++pos_, true;
    return expected(Want::kLiteral, " ");
  }
  // The end of a line.
  bool end_line() {
    if (pos_ >= b_.size() || b_[pos_] != '\n') return expected(Want::kLiteral, "\n");
    ++pos_;
    return next_line();
  }
  // A line's last word `s`, with its newline.
  bool end_line(std::string_view s) { return lit(s) && next_line(); }

  template <typename T>
  bool num(T& v, std::string_view what) {
    auto got = parse_number<T>();
    if (!got) return expected(Want::kText, what);
    v = *got;
    return true;
  }

  // A length-prefixed string, "<len>:<bytes>".
  bool str(std::string& out, std::string_view what) {
    auto n = parse_number<size_t>();
    if (!n) return expected(Want::kLengthOf, what);
    if (pos_ >= b_.size() || b_[pos_] != ':') return expected(Want::kLiteral, ":");
    ++pos_;
    if (*n > b_.size() - pos_) return expected(Want::kBytesOf, what, *n);
    out.assign(b_.data() + pos_, *n);
    pos_ += *n;
    return true;
  }

  // A condition on what was just read; `what` says what was expected instead.
  bool check(bool ok, std::string_view what) { return ok || expected(Want::kText, what); }

  // The failure noted last, as text.
  Error error() const {
    switch (want_) {
      case Want::kLiteral:
        return settled_record_error(at_, line_, fmt::format("expected '{}'", what_));
      case Want::kLengthOf:
        return settled_record_error(at_, line_, fmt::format("expected the length of {}", what_));
      case Want::kBytesOf:
        return settled_record_error(at_, line_,
                                    fmt::format("expected {} bytes of {}", bytes_, what_));
      case Want::kText:
        break;
    }
    return settled_record_error(at_, line_, fmt::format("expected {}", what_));
  }

 private:
  enum class Want : uint8_t { kText, kLiteral, kLengthOf, kBytesOf };

  // Notes a failure; kept out of line so that the parsers' good path stays small.
  [[gnu::cold]] [[gnu::noinline]] bool expected(Want want, std::string_view what,
                                                size_t bytes = 0) {
    want_ = want;
    what_ = what;
    bytes_ = bytes;
    at_ = pos_;
    return false;
  }

  // Only what encode_settled() writes: digits, '-' for a negative value, no '+';
  // from_chars' grammar, with a plain loop for the common case of a few digits.
  template <typename T>
  std::optional<T> parse_number() {
    const char* first = b_.data() + pos_;
    const char* last = b_.data() + b_.size();
    if (first == last) return std::nullopt;
    if (*first != '-') {
      // Up to 19 digits cannot overflow an unsigned 64-bit value; a longer number, or
      // a type it may not fit, goes to from_chars.
      uint64_t v = 0;
      const char* p = first;
      while (p < last && p - first < 19 && static_cast<unsigned char>(*p - '0') < 10) {
        v = v * 10 + static_cast<uint64_t>(*p - '0');
        ++p;
      }
      if (p == first) return std::nullopt;
      bool more = p < last && static_cast<unsigned char>(*p - '0') < 10;
      if (!more && v <= static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        pos_ += static_cast<size_t>(p - first);
        return static_cast<T>(v);
      }
    }
    T v{};
    auto [p, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || p == first) return std::nullopt;
    pos_ += static_cast<size_t>(p - first);
    return v;
  }

  bool next_line() {
    if (line_ > 0) ++line_;
    return true;
  }

  std::string_view b_;
  size_t pos_ = 0;
  size_t line_ = 1;
  // The failure noted last: what was expected, at which byte.
  Want want_ = Want::kText;
  std::string_view what_;  // a literal of the parsers, never a view of the record
  size_t bytes_ = 0;
  size_t at_ = 0;
};

}  // namespace berth::pipeline
