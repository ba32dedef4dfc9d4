// String helpers shared by every parser in berth.
//
// All functions are pure and locale-independent: the ctype-style predicates here take
// a char and never index a table with a negative value (every ctype call on a plain
// char with the high bit set is undefined behaviour).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::str {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Leading and trailing whitespace removed.
std::string_view trim(std::string_view s);

// Splits on `sep`, keeping empty fields ("a,,b" -> {"a","","b"}; "" -> {""}).
std::vector<std::string_view> split(std::string_view s, char sep);

// Splits on runs of whitespace, dropping empty fields ("  a \t b " -> {"a","b"}).
std::vector<std::string_view> split_ws(std::string_view s);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

std::string to_lower(std::string_view s);

// Parses a whole string as a decimal unsigned integer no larger than `max`.
// Fails (kInvalidInput, message without the input's name; callers add it) on an empty
// string, a sign, any non-digit, or overflow.
Result<uint64_t> parse_uint(std::string_view s, uint64_t max = UINT64_MAX);

// The string with control characters and non-ASCII bytes shown as \xNN, cut to
// `max_len` characters with "..." — safe to put into a one-line error message.
std::string printable(std::string_view s, size_t max_len = 64);

// `s` made safe for XML element text and for an attribute in either quote, and so for
// HTML too (HTML5 defines the same five entities): & < > " ' become &amp; &lt; &gt;
// &quot; &apos;. XML 1.0 cannot carry control characters other than tab even as
// references, and an attribute would turn a raw newline into a space, so each byte below
// 0x20 but tab becomes its Unicode control picture, U+2400 + byte ("&#x240a;" for a
// newline): visible, and nothing is silently dropped. Other bytes pass unchanged.
std::string xml_escape(std::string_view s);

// True for a dotted-quad IPv4 address or anything containing ':' (IPv6): such names are
// never shortened to a "short host name".
bool is_ip_address(std::string_view s);

// True when the JSON text `s` nests '{' or '[' (outside strings) more than `limit`
// deep. nlohmann's parser recurses once per level: checking first means a hostile
// document of a million '[' never reaches it. Linear; never fails, whatever the bytes.
bool json_deeper_than(std::string_view s, int limit);

// Where the JSON object or array that starts at `at` ends (one past its closing
// bracket), counting brackets outside strings; npos when `at` is not '{' or '[', the
// value is not closed, or it nests more than `limit` deep. Checks brackets only, not
// the JSON between them.
size_t json_value_end(std::string_view s, size_t at, int limit);

// True when `s` is printable ASCII without a quote or a backslash: as a JSON string it
// is itself between quotes.
bool is_plain_json(std::string_view s);

// Appends `s` as a JSON string, quotes included, byte for byte as nlohmann's
// dump(-1, ' ', false, error_handler_t::replace) writes it: invalid UTF-8 becomes
// U+FFFD rather than an exception. For JSON written straight into a buffer, without
// building a tree of 10^5 nodes first.
void append_json_string(std::string& out, std::string_view s);

// `s` quoted for a POSIX shell: unchanged when it is non-empty and made only of
// [A-Za-z0-9_@%+=:,./-], else in single quotes with each ' written '\''.
std::string shell_quote(std::string_view s);

}  // namespace berth::str
