#include "alloc/rm_input.h"

#include <fmt/format.h>

#include "util/files.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

// What byte `c` is, for a message: "a control character", "a space", "'['".
std::string describe_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) return "a control character";
  if (u >= 0x80) return "a non-ASCII byte";
  if (c == ' ') return "a space";
  return fmt::format("'{}'", c);
}

bool host_char_ok(char c) {
  return str::is_alnum(c) || c == '-' || c == '.' || c == '_' || c == ':';
}

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is not one.
// Overlong forms, surrogates and code points above U+10FFFF are refused, as RFC 3629
// requires; JSON writers (nlohmann's dump among them) refuse them too, and a job id is
// displayed as JSON.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = at(i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // no overlong 3-byte forms
    if (b0 == 0xed) hi = 0x9f;  // no UTF-16 surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // no overlong 4-byte forms
    if (b0 == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::optional<std::string> host_name_problem(std::string_view name) {
  if (name.empty()) return std::string("empty host name");
  if (name.size() > kMaxHostNameBytes) {
    return fmt::format("host name '{}' is {} bytes long; the limit is {}", str::printable(name),
                       name.size(), kMaxHostNameBytes);
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!host_char_ok(name[i])) {
      return fmt::format("'{}' is not a host name: {} at byte {}", str::printable(name),
                         describe_byte(name[i]), i + 1);
    }
  }
  if (!(str::is_alnum(name[0]) || name[0] == ':')) {
    return fmt::format("'{}' is not a host name: it starts with '{}'", str::printable(name),
                       name[0]);
  }
  return std::nullopt;
}

std::optional<std::string> job_id_problem(std::string_view id) {
  constexpr size_t kMaxJobIdBytes = 256;
  if (id.empty()) return std::string("empty job id");
  if (id.size() > kMaxJobIdBytes) {
    return fmt::format("job id is {} bytes long; the limit is {}", id.size(), kMaxJobIdBytes);
  }
  for (size_t i = 0; i < id.size();) {
    auto u = static_cast<unsigned char>(id[i]);
    if (u < 0x80 && (u <= 0x20 || u == 0x7f)) {
      return fmt::format("'{}' is not a job id: {} at byte {}", str::printable(id),
                         describe_byte(id[i]), i + 1);
    }
    size_t n = utf8_sequence_length(id, i);
    if (n == 0) {
      return fmt::format("'{}' is not a job id: malformed UTF-8 at byte {}", str::printable(id),
                         i + 1);
    }
    i += n;
  }
  return std::nullopt;
}

Result<void> SlotTally::add(std::string_view name, int64_t slots) {
  auto [it, inserted] = index_.try_emplace(std::string(name), nodes_.size());
  if (inserted) {
    NodeSpec s;
    s.name = std::string(name);
    s.slots_given = true;
    nodes_.push_back(std::move(s));
  }
  NodeSpec& node = nodes_[it->second];
  // Checked before adding so that the sum can never overflow, whatever `slots` is.
  if (slots > kMaxNodeSlots - node.slots) {
    return fail(Errc::kInvalidInput, fmt::format("host '{}' would have more than {} slots",
                                                 str::printable(name), kMaxNodeSlots));
  }
  node.slots += slots;
  return Ok{};
}

std::vector<NodeSpec> SlotTally::take() && {
  index_.clear();
  return std::move(nodes_);
}

Result<std::vector<NodeSpec>> parse_host_per_line(std::string_view text, std::string_view origin) {
  SlotTally tally;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    // split_ws() treats the CR of a CRLF line as one more blank, so CRLF files need no
    // special case.
    auto fields = str::split_ws(line);
    if (fields.empty()) continue;
    if (fields.size() > 1) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}:{}: expected one host name, found {} fields ('{}')", origin,
                              line_no, fields.size(), str::printable(str::trim(line))));
    }
    if (auto problem = host_name_problem(fields[0])) {
      return fail(Errc::kInvalidInput, fmt::format("{}:{}: {}", origin, line_no, *problem));
    }
    auto added = tally.add(fields[0], 1);
    if (!added.ok()) {
      return added.error().with_context(fmt::format("{}:{}", origin, line_no));
    }
  }
  if (tally.empty()) {
    return fail(Errc::kInvalidInput, fmt::format("{}: no host names in the file", origin));
  }
  return std::move(tally).take();
}

Result<std::optional<std::string>> get_required_value(const Env& env, std::string_view name) {
  BERTH_TRY(auto value, env.get_bounded(name));
  if (value && value->empty()) {
    return fail(Errc::kInvalidInput, fmt::format("{}: is set but empty", name));
  }
  return value;
}

Result<std::string> get_job_id(const Env& env, std::string_view name) {
  BERTH_TRY(auto value, get_required_value(env, name));
  if (!value) return std::string();
  if (auto problem = job_id_problem(*value)) {
    return fail(Errc::kInvalidInput, fmt::format("{}: {}", name, *problem));
  }
  return std::move(*value);
}

std::string file_origin(std::string_view what, std::string_view path) {
  return fmt::format("{} {}", what, str::printable(path, 1024));
}

Result<std::string> read_named_file(std::string_view what, const std::string& path) {
  auto text = files::read_file(path);
  if (!text.ok()) {
    // read_file's message starts with the raw path; it is replaced by the printable
    // origin so that a path with a newline in it cannot break the message in two.
    std::string_view msg = text.error().message();
    std::string origin = file_origin(what, path);
    if (msg.substr(0, path.size() + 2) == path + ": ") {
      msg.remove_prefix(path.size() + 2);
    }
    return Error(text.error().code(), fmt::format("{}: {}", origin, msg));
  }
  return std::move(text).value();
}

}  // namespace berth::alloc
