// --host: one comma-separated list of hosts and relative tokens (spec 01 §2.3, §5).
//
//   a,b        one slot each         a:4      four slots       a:* / a:auto  slots from cores
//   +n3        the allocation's node 3, counting from zero
//   +e  +e:2   every / two empty node(s) of the allocation
//
// Beyond PRRTE (whose --host splits on every ',' and every ':'):
//   - hostlist expressions, "nid[01-04]:2", because commas inside brackets belong to the
//     bracket and Slurm users type them; the expansion is bounded (kMaxNames);
//   - IPv6 addresses: a token with two or more ':' is a bare address ("fe80::1"), and
//     "[fe80::1]:4" gives one a slot count, as URLs write host and port (RFC 3986);
//   - every malformed token is an error with its position; PRRTE's strtol reads
//     "a:x" as 0 slots and "+nx" as node 0.
//
// A name given more than once adds its slots up ("a,a" is a:2, "a:2,a" is a:3) and the
// total counts as explicit: the user spelled the count out, one entry per slot, exactly as
// PRRTE sets SLOTS_GIVEN for a repeated name. Relative tokens are kept in order and never
// merged: they mean something only against an allocation, which the caller has. With
// ':*', a token's `slots` means nothing (it stays 1): the caller sizes the node.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <unordered_map>

#include "alloc/hostlist.h"
#include "alloc/source.h"
#include "util/strings.h"

namespace berth::alloc {
namespace internal {

// Why `name` cannot be a host name: the 0-based offset of the byte at fault and the
// reason; nullopt when it can. This is the one definition of a host name for --host and
// hostfiles (hostfile.cc declares it too: both parsers must accept exactly the same
// names; it belongs in a header of its own, host_name.h, once the directory has one).
//
// A name is 1..255 bytes of [A-Za-z0-9._-], not starting with '-' or '.', or an IPv6
// address. The allow-list is deliberate: names end up in ssh/launcher argv and in every
// message, so a byte outside it (a space, a control character, UTF-8, '$', '/', '@',
// ...) is a typo or an attack, never a machine; a leading '-' would read as an option.
std::optional<std::pair<size_t, std::string>> host_name_problem(std::string_view name) {
  using Problem = std::pair<size_t, std::string>;
  constexpr size_t kMaxNameBytes = 255;  // the DNS limit on a whole name
  if (name.empty()) return Problem{0, "empty host name"};
  if (name.size() > kMaxNameBytes) {
    return Problem{kMaxNameBytes, fmt::format("host name longer than {} bytes", kMaxNameBytes)};
  }
  if (name.find(':') != std::string_view::npos) {
    // Only an IPv6 address may contain ':'. inet_pton needs a C string, so every byte is
    // checked first: a NUL inside `name` would otherwise end the address early.
    for (size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      bool hex = str::is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!hex && c != ':' && c != '.') {
        return Problem{i, fmt::format("'{}' is not an IPv6 address (':' is allowed only "
                                      "in one; zone ids such as '%eth0' are not supported)",
                                      str::printable(name))};
      }
    }
    unsigned char buf[16];
    if (::inet_pton(AF_INET6, std::string(name).c_str(), buf) != 1) {
      return Problem{0, fmt::format("'{}' is not an IPv6 address (':' is allowed only in "
                                    "one)",
                                    str::printable(name))};
    }
    return std::nullopt;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (str::is_alnum(c) || c == '-' || c == '.' || c == '_') continue;
    auto u = static_cast<unsigned char>(c);
    std::string what;
    if (str::is_space(c)) {
      what = "whitespace is not allowed in a host name";
    } else if (u < 0x20 || u >= 0x7f) {
      what =
          fmt::format("byte '{}' is not allowed in a host name", str::printable(name.substr(i, 1)));
    } else if (c == '@') {
      what = "'@' is not allowed in a host name (user@host takes one '@')";
    } else {
      what = fmt::format("character '{}' is not allowed in a host name", c);
    }
    return Problem{i, std::move(what)};
  }
  if (name[0] == '-') return Problem{0, "a host name cannot start with '-'"};
  if (name[0] == '.') return Problem{0, "a host name cannot start with '.'"};
  return std::nullopt;
}

// Rebases a hostlist::expand error ("position K: what", K relative to the expression) onto
// the enclosing text, whose expression starts at 0-based `base`. Falls back to `base` if
// the message does not have that shape.
std::pair<size_t, std::string> rebase_hostlist_error(const std::string& msg, size_t base) {
  constexpr std::string_view kPrefix = "position ";
  if (msg.compare(0, kPrefix.size(), kPrefix) == 0) {
    size_t colon = msg.find(": ", kPrefix.size());
    if (colon != std::string::npos) {
      auto k = str::parse_uint(std::string_view(msg).substr(kPrefix.size(), colon - kPrefix.size()),
                               1u << 20);
      if (k.ok() && *k >= 1) return {base + static_cast<size_t>(*k) - 1, msg.substr(colon + 2)};
    }
  }
  return {base, msg};
}

}  // namespace internal

namespace {

// Bounds every --host value: no list a person types names a million hosts, and a larger
// expansion is a typo ("nid[1-10000000]") that must not allocate gigabytes.
constexpr size_t kMaxNames = 1'000'000;
constexpr uint64_t kMaxCount = INT32_MAX;

class Parser {
 public:
  Parser(std::string_view text, std::string_view origin, size_t max_names)
      : text_(text), origin_(origin), max_names_(max_names) {}

  Result<std::vector<HostToken>> parse() {
    if (text_.empty()) return error(0, "empty host list");
    size_t start = 0;
    int depth = 0;
    // Split on ',' outside brackets: "nid[1,3],b" is two tokens. An unbalanced bracket
    // leaves the rest as one token for hostlist::expand to report.
    for (size_t i = 0; i <= text_.size(); ++i) {
      if (i < text_.size()) {
        char c = text_[i];
        if (c == '[') ++depth;
        if (c == ']' && depth > 0) --depth;
        if (c != ',' || depth > 0) continue;
      }
      BERTH_CHECK(token(start, text_.substr(start, i - start)));
      start = i + 1;
    }
    return std::move(out_);
  }

 private:
  Failure error(size_t offset, std::string_view what) const {
    return fail(Errc::kInvalidInput, fmt::format("{}: position {}: {}", origin_, offset + 1, what));
  }

  // One token, starting at 0-based `at` in the text.
  Result<void> token(size_t at, std::string_view tok) {
    if (tok.empty()) {
      return error(at, "empty host name (two commas in a row, or a comma at an end)");
    }
    if (tok[0] == '+') return relative(at, tok);
    return host(at, tok);
  }

  // "+n<index>", "+e", "+e:<count>" (either case of the letter, as PRRTE accepts).
  Result<void> relative(size_t at, std::string_view tok) {
    char kind = tok.size() > 1 ? tok[1] : '\0';
    HostToken t;
    if (kind == 'n' || kind == 'N') {
      std::string_view digits = tok.substr(2);
      if (digits.empty()) return error(at, "+n needs a node index: +n0, +n1, ...");
      if (size_t colon = digits.find(':'); colon != std::string_view::npos) {
        return error(at + 2 + colon, "a relative token takes no slot count");
      }
      BERTH_TRY(t.index, number(at + 2, digits, 0, "+n index"));
      t.kind = HostToken::kRelativeIndex;
    } else if (kind == 'e' || kind == 'E') {
      t.kind = HostToken::kEmpty;
      if (tok.size() > 2) {
        if (tok[2] != ':') {
          return error(at + 2, fmt::format("'{}': +e takes its count after a ':' (+e:2)",
                                           str::printable(tok)));
        }
        BERTH_TRY(t.count, number(at + 3, tok.substr(3), 1, "+e:N count"));
      }
    } else {
      return error(at, fmt::format("'{}' is not a relative token: expected +n<index>, +e or "
                                   "+e:<count>",
                                   str::printable(tok)));
    }
    out_.push_back(std::move(t));
    return Ok{};
  }

  // "name", "name:N", "name:*", "expr[..]:N", "fe80::1", "[fe80::1]:N".
  Result<void> host(size_t at, std::string_view tok) {
    std::string_view name = tok;
    std::optional<size_t> count_at;  // 0-based offset of the text after ':'
    size_t name_at = at;
    if (tok[0] == '[' && tok.find(':') < tok.find(']')) {
      // A bracketed IPv6 address; hostlist brackets never hold a ':'.
      size_t close = tok.find(']');
      if (close == std::string_view::npos) {
        return error(at, "'[' of an IPv6 address is never closed");
      }
      name = tok.substr(1, close - 1);
      name_at = at + 1;
      if (close + 1 < tok.size()) {
        if (tok[close + 1] != ':') {
          return error(at + close + 1, "expected ':<slots>' or nothing after ']'");
        }
        count_at = close + 2;
      }
    } else {
      size_t colons = 0;
      size_t last = 0;
      int depth = 0;
      for (size_t i = 0; i < tok.size(); ++i) {
        if (tok[i] == '[') ++depth;
        if (tok[i] == ']' && depth > 0) --depth;
        if (tok[i] == ':' && depth == 0) {
          ++colons;
          last = i;
        }
      }
      if (colons == 1) {
        name = tok.substr(0, last);
        count_at = last + 1;
      }
      // Two or more: the whole token is an IPv6 address, checked with the name below.
      if (colons >= 2) {
        if (auto p = internal::host_name_problem(tok)) {
          return error(at, fmt::format("{}; write an IPv6 address with a slot count as "
                                       "[address]:N",
                                       p->second));
        }
      }
    }

    HostToken t;
    if (count_at) {
      std::string_view count = tok.substr(*count_at);
      if (count == "*" || count == "auto") {
        t.slots_star = true;
      } else {
        BERTH_TRY(t.slots, number(at + *count_at, count, 1, "slot count"));
        t.slots_explicit = true;
      }
    }
    if (name.empty()) return error(name_at, "empty host name before ':'");

    if (name.find_first_of("[],") == std::string_view::npos || name_at != at) {
      if (auto p = internal::host_name_problem(name)) return error(name_at + p->first, p->second);
      return add(at, std::string(name), t);
    }
    auto names = hostlist::expand(name, max_names_ - names_used_);
    if (!names.ok()) {
      auto [pos, what] = internal::rebase_hostlist_error(names.error().message(), name_at);
      // Told apart by counting against the whole budget, not by reading the message;
      // counting allocates no names, where expanding again would make up to max_names_.
      if (hostlist::count(name, max_names_).ok()) {
        what = fmt::format("the list names more than {} hosts in all", max_names_);
        pos = name_at;
      }
      return error(pos, what);
    }
    names_used_ += names->size();
    for (std::string& n : *names) {
      if (auto p = internal::host_name_problem(n)) {
        return error(name_at, fmt::format("'{}' expands to '{}': {}", str::printable(name),
                                          str::printable(n), p->second));
      }
      BERTH_CHECK(add(at, std::move(n), t));
    }
    return Ok{};
  }

  // Adds one occurrence of a name, merging it with an earlier one.
  Result<void> add(size_t at, std::string name, const HostToken& t) {
    auto [it, fresh] = seen_.try_emplace(name, out_.size());
    if (fresh) {
      HostToken n = t;
      n.kind = HostToken::kName;
      n.name = std::move(name);
      out_.push_back(std::move(n));
      return Ok{};
    }
    HostToken& prev = out_[it->second];
    // ":*" says "however many the node has"; adding a count to that means nothing, so
    // PRRTE's silent mix (its -1 marker leaking into a sum) becomes an error.
    if (prev.slots_star || t.slots_star) {
      return error(at, fmt::format("'{}' is given more than once with ':*'; ':*' takes every "
                                   "slot, so it cannot be added to",
                                   str::printable(prev.name)));
    }
    if (static_cast<uint64_t>(prev.slots) + static_cast<uint64_t>(t.slots) > kMaxCount) {
      return error(at, fmt::format("'{}' adds up to more than {} slots", str::printable(prev.name),
                                   kMaxCount));
    }
    prev.slots += t.slots;
    prev.slots_explicit = true;
    return Ok{};
  }

  // A decimal in [min, 2^31-1] at 0-based `at`.
  Result<int64_t> number(size_t at, std::string_view digits, uint64_t min,
                         std::string_view what) const {
    for (size_t i = 0; i < digits.size(); ++i) {
      if (!str::is_digit(digits[i])) {
        return error(at + i, fmt::format("{} '{}' is not a number from {} to {}{}", what,
                                         str::printable(digits), min, kMaxCount,
                                         what == "slot count" ? " or '*'" : ""));
      }
    }
    auto v = str::parse_uint(digits, kMaxCount);
    if (digits.empty()) {
      return error(at, fmt::format("expected a {} after ':'", what));
    }
    if (!v.ok() || *v < min) {
      return error(at, fmt::format("{} '{}' is out of range: expected {} to {}", what,
                                   str::printable(digits), min, kMaxCount));
    }
    return static_cast<int64_t>(*v);
  }

  std::string_view text_;
  std::string_view origin_;
  size_t max_names_;
  std::vector<HostToken> out_;
  std::unordered_map<std::string, size_t> seen_;  // name -> index in out_
  size_t names_used_ = 0;
};

}  // namespace

namespace internal {
// parse_dash_host with its bound as a parameter, so that tests can reach it cheaply.
Result<std::vector<HostToken>> parse_dash_host(std::string_view text, std::string_view origin,
                                               size_t max_names) {
  return Parser(text, origin, max_names).parse();
}
}  // namespace internal

Result<std::vector<HostToken>> parse_dash_host(std::string_view text, std::string_view origin) {
  return internal::parse_dash_host(text, origin, kMaxNames);
}

}  // namespace berth::alloc
