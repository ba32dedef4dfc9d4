// The PMI wire format (pmi_wire.h, spec 07 §3.1).
#include "wireup/pmi_wire.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace berth::wireup::pmi {
namespace {

constexpr std::string_view kCmd = "cmd=";
constexpr std::string_view kMcmd = "mcmd=";
constexpr std::string_view kEndcmd = "endcmd";
constexpr size_t kLengthField = 6;

// `pos` is 0-based here and 1-based in the message.
Failure error_at(size_t pos, std::string_view what) {
  return fail(Errc::kInvalidInput, fmt::format("position {}: {}", pos + 1, what));
}

std::string quoted(std::string_view s) { return "'" + str::printable(s, 32) + "'"; }

// Splits `word` (which starts at `pos` of the message) at its first '='.
Result<Pair> split_pair(std::string_view word, size_t pos) {
  size_t eq = word.find('=');
  if (eq == std::string_view::npos) {
    return error_at(pos, fmt::format("expected key=value, found {}", quoted(word)));
  }
  if (eq == 0) return error_at(pos, "expected a key before '='");
  return Pair{std::string(word.substr(0, eq)), std::string(word.substr(eq + 1))};
}

// A NUL cannot travel through a C client's strings: refuse it wherever it is.
Result<void> no_nul(std::string_view s) {
  size_t nul = s.find('\0');
  if (nul != std::string_view::npos) return error_at(nul, "NUL byte");
  return Ok{};
}

// `cmd=put kvsname=k key=a value=b\n`: words separated by runs of spaces (as MPICH's
// own parser reads them), the first naming the command.
Result<Message> decode_line(std::string_view framed) {
  std::string_view line = framed.substr(0, framed.size() - 1);  // without its '\n'
  if (size_t nl = line.find('\n'); nl != std::string_view::npos) {
    return error_at(nl, "newline inside the line");
  }
  if (line.substr(0, kCmd.size()) != kCmd) {
    return error_at(0, fmt::format("expected 'cmd=', found {}", quoted(line.substr(0, 8))));
  }
  Message m;
  size_t i = 0;
  bool first = true;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    BERTH_TRY(Pair p, split_pair(line.substr(i, end - i), i));
    if (first) {
      if (p.value.empty()) return error_at(i + kCmd.size(), "expected a command after 'cmd='");
      m.cmd = std::move(p.value);
      first = false;
    } else {
      m.args.push_back(std::move(p));
    }
    i = end;
  }
  return m;
}

// `mcmd=spawn\nkey=value\n…endcmd\n`: one pair a line, a value running to the end of
// its line (spaces and '=' included: spawn's arguments are free text).
Result<Message> decode_block(std::string_view framed) {
  Message m;
  m.multi_line = true;
  size_t i = 0;
  bool first = true;
  while (true) {
    if (i >= framed.size()) return error_at(i, "expected 'endcmd'");
    size_t nl = framed.find('\n', i);  // found: the message ends with one
    std::string_view line = framed.substr(i, nl - i);
    if (line == kEndcmd) {
      if (nl + 1 != framed.size()) return error_at(nl + 1, "expected nothing after 'endcmd'");
      break;
    }
    BERTH_TRY(Pair p, split_pair(line, i));
    if (first) {
      if (p.key != "mcmd") return error_at(i, "expected 'mcmd='");
      if (p.value.empty()) return error_at(i + kMcmd.size(), "expected a command after 'mcmd='");
      m.cmd = std::move(p.value);
      first = false;
    } else {
      m.args.push_back(std::move(p));
    }
    i = nl + 1;
  }
  return m;
}

// Strict PMI-2 body: `key=value;` pairs, the first `cmd=…`, ";;" standing for ';' in a
// value; `base` is the body's offset in the message.
Result<Message> decode_pairs(std::string_view body, size_t base) {
  Message m;
  size_t i = 0;
  bool first = true;
  if (body.empty()) return error_at(base, "expected 'cmd=', found the end of the message");
  while (i < body.size()) {
    size_t key_start = i;
    while (i < body.size() && body[i] != '=' && body[i] != ';') ++i;
    if (i >= body.size()) return error_at(base + key_start, "expected key=value;");
    if (body[i] == ';') return error_at(base + i, "expected '=' before ';'");
    if (i == key_start) return error_at(base + i, "expected a key before '='");
    std::string key(body.substr(key_start, i - key_start));
    ++i;  // the '='
    std::string value;
    bool terminated = false;
    while (i < body.size()) {
      if (body[i] == ';') {
        if (i + 1 < body.size() && body[i + 1] == ';') {
          value += ';';
          i += 2;
          continue;
        }
        ++i;
        terminated = true;
        break;
      }
      value += body[i++];
    }
    if (!terminated) {
      return error_at(base + i,
                      fmt::format("value of '{}' is not ended by ';'", str::printable(key, 32)));
    }
    if (first) {
      if (key != "cmd") return error_at(base + key_start, "expected 'cmd=' first");
      if (value.empty()) return error_at(base + key_start + kCmd.size(), "expected a command");
      m.cmd = std::move(value);
      first = false;
    } else {
      m.args.push_back(Pair{std::move(key), std::move(value)});
    }
  }
  return m;
}

// The length field: 1-6 digits, padded with spaces on either side to six characters.
Result<size_t> length_field(std::string_view f) {
  size_t i = 0;
  while (i < f.size() && f[i] == ' ') ++i;
  size_t digits = i;
  size_t n = 0;
  while (i < f.size() && str::is_digit(f[i])) n = n * 10 + static_cast<size_t>(f[i++] - '0');
  if (i == digits) return error_at(i, "expected the message length (six characters)");
  while (i < f.size() && f[i] == ' ') ++i;
  if (i < f.size()) {
    return error_at(i, fmt::format("expected a digit or space in the message length, found {}",
                                   quoted(f.substr(i, 1))));
  }
  if (n > kMaxBlock) {
    return error_at(0, fmt::format("message length {} exceeds {}", n, kMaxBlock));
  }
  return n;
}

}  // namespace

std::optional<std::string_view> Message::find(std::string_view key) const {
  for (const Pair& p : args) {
    if (p.key == key) return std::string_view(p.value);
  }
  return std::nullopt;
}

Result<std::optional<Frame>> next_frame(std::string_view buf) {
  if (buf.empty()) return std::optional<Frame>();
  // A PMI-2 length field starts with a digit or a space; a PMI-1 message never does.
  if (str::is_digit(buf[0]) || buf[0] == ' ') {
    if (buf.size() < kLengthField) return std::optional<Frame>();
    BERTH_TRY(size_t n, length_field(buf.substr(0, kLengthField)));
    if (buf.size() < kLengthField + n) return std::optional<Frame>();
    return std::optional<Frame>(Frame{Wire::kPmi2, kLengthField + n});
  }
  if (buf[0] == 'm' && kMcmd.substr(0, buf.size()) == buf.substr(0, kMcmd.size())) {
    if (buf.size() < kMcmd.size()) return std::optional<Frame>();
    // The block ends at a line that is exactly "endcmd".
    size_t line = 0;
    while (true) {
      size_t nl = buf.find('\n', line);
      if (nl == std::string_view::npos || nl >= kMaxBlock) {
        if (buf.size() >= kMaxBlock) {
          return error_at(0, fmt::format("mcmd block longer than {} bytes", kMaxBlock));
        }
        return std::optional<Frame>();
      }
      if (buf.substr(line, nl - line) == kEndcmd) {
        return std::optional<Frame>(Frame{Wire::kPmi1, nl + 1});
      }
      line = nl + 1;
    }
  }
  size_t nl = buf.find('\n');
  if (nl == std::string_view::npos || nl >= kMaxPmi1Line) {
    if (buf.size() >= kMaxPmi1Line) {
      return error_at(0, fmt::format("line longer than {} bytes", kMaxPmi1Line));
    }
    return std::optional<Frame>();
  }
  return std::optional<Frame>(Frame{Wire::kPmi1, nl + 1});
}

Result<Message> decode(Wire wire, std::string_view framed) {
  BERTH_CHECK(no_nul(framed));
  if (wire == Wire::kPmi1) {
    if (framed.empty() || framed.back() != '\n') {
      return error_at(framed.size(), "expected a newline at the end of the message");
    }
    if (framed.substr(0, kMcmd.size()) == kMcmd) return decode_block(framed);
    return decode_line(framed);
  }
  if (framed.size() < kLengthField) {
    return error_at(framed.size(), "expected a six-character message length");
  }
  BERTH_TRY(size_t n, length_field(framed.substr(0, kLengthField)));
  std::string_view body = framed.substr(kLengthField);
  if (body.size() != n) {
    return error_at(framed.size(),
                    fmt::format("expected {} bytes after the length, found {}", n, body.size()));
  }
  auto strict = decode_pairs(body, kLengthField);
  if (strict.ok() || body.size() <= kLengthField) return strict;
  // MPICH's PMI-2 client before 4.1 counts its own length field in the length it sends
  // and follows the message with that many undefined bytes: a body whose last six bytes
  // are not pairs is read without them.
  auto trimmed = decode_pairs(body.substr(0, body.size() - kLengthField), kLengthField);
  if (trimmed.ok()) return trimmed;
  return strict;
}

std::string encode(Wire wire, const Message& m) {
  std::string out;
  if (wire == Wire::kPmi1 && m.multi_line) {
    out = fmt::format("mcmd={}\n", m.cmd);
    for (const Pair& p : m.args) out += fmt::format("{}={}\n", p.key, p.value);
    out += "endcmd\n";
    return out;
  }
  if (wire == Wire::kPmi1) {
    out = fmt::format("cmd={}", m.cmd);
    for (const Pair& p : m.args) out += fmt::format(" {}={}", p.key, p.value);
    out += '\n';
    return out;
  }
  auto escaped = [](std::string_view v) {
    std::string e;
    for (char c : v) {
      if (c == ';') e += ';';
      e += c;
    }
    return e;
  };
  std::string body = fmt::format("cmd={};", escaped(m.cmd));
  for (const Pair& p : m.args) body += fmt::format("{}={};", p.key, escaped(p.value));
  return fmt::format("{:>6}", body.size()) + body;
}

}  // namespace berth::wireup::pmi
