#include "util/strings.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace berth::str {

std::string_view trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    size_t b = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Result<uint64_t> parse_uint(std::string_view s, uint64_t max) {
  if (s.empty()) return fail(Errc::kInvalidInput, "expected a number, found nothing");
  uint64_t v = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!is_digit(c)) {
      return fail(Errc::kInvalidInput,
                  fmt::format("expected a number, found '{}' at position {}",
                              printable(s.substr(i, 1)), i + 1));
    }
    uint64_t d = static_cast<uint64_t>(c - '0');
    // d > max first: max - d would wrap for a small max.
    if (d > max || v > (max - d) / 10) {
      return fail(Errc::kInvalidInput,
                  fmt::format("number '{}' is larger than {}", printable(s), max));
    }
    v = v * 10 + d;
  }
  return v;
}

std::string printable(std::string_view s, size_t max_len) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c < 0x20 && c != '\t') {
          out += fmt::format("&#x{:x};", 0x2400 + c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

bool is_ip_address(std::string_view s) {
  if (s.find(':') != std::string_view::npos) return true;
  // Dotted quad: four groups of 1-3 digits. One pass, no allocation: the pool calls
  // this for every node of an allocation.
  int groups = 0;
  size_t digits = 0;
  for (char c : s) {
    if (is_digit(c)) {
      if (++digits > 3) return false;
    } else if (c == '.') {
      if (digits == 0) return false;
      ++groups;
      digits = 0;
    } else {
      return false;
    }
  }
  return groups == 3 && digits > 0;
}

namespace {

// Walks JSON text from `from`, counting '{' and '[' against '}' and ']' outside
// strings, and calls step(depth, i) after each bracket at i; stops when it returns true
// (returning i) or at the end (returning npos).
template <typename Step>
size_t walk_brackets(std::string_view s, size_t from, Step step) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = from; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{' || c == ']' || c == '}') {
      depth += (c == '[' || c == '{') ? 1 : -1;
      if (step(depth, i)) return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool json_deeper_than(std::string_view s, int limit) {
  return walk_brackets(s, 0, [limit](int depth, size_t) { return depth > limit; }) !=
         std::string_view::npos;
}

size_t json_value_end(std::string_view s, size_t at, int limit) {
  if (at >= s.size() || (s[at] != '{' && s[at] != '[')) return std::string_view::npos;
  bool deep = false;
  size_t i = walk_brackets(s, at, [&](int depth, size_t) {
    deep = depth > limit;
    return deep || depth == 0;
  });
  return i == std::string_view::npos || deep ? std::string_view::npos : i + 1;
}

bool is_plain_json(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

void append_json_string(std::string& out, std::string_view s) {
  // Printable ASCII without a quote or a backslash is written as it is; anything else
  // (escapes, UTF-8 to check) goes through nlohmann, so that the rules are its own.
  if (is_plain_json(s)) {
    out += '"';
    out.append(s);
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace);
}

std::string shell_quote(std::string_view s) {
  bool plain = !s.empty();
  for (char c : s) {
    if (!str::is_alnum(c) && std::string_view("_@%+=:,./-").find(c) == std::string_view::npos) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

}  // namespace berth::str
