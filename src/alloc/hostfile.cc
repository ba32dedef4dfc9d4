// Hostfiles (spec 01 §5): one host entry per line, then key=value settings.
//
//   # a comment; so is everything after a '#' on any line
//   node01 slots=10 max_slots=12
//   alice@node02                 one slot, logged into as alice
//   node[03-06] slots=8          a hostlist expression: one entry per name (beyond PRRTE)
//   ^node04                      excluded (may be an expression too: ^node[05-06])
//   fe80::1  [fe80::2]           IPv6 addresses, bare or bracketed
//
// Keys, with PRRTE's spellings (its hostfile lexer, src/util/hostfile/hostfile_lex.l,
// where cpu= and count= are other names for slots=): slots, cpu, count; max_slots,
// max-slots, slots_max, slots-max and the cpu_/count_ forms of those; username,
// user-name, user_name. Keys are case-insensitive and "slots = 4" may be spaced out.
//
// Where berth parts from PRRTE, and why:
//   - A host listed on several lines adds its slots up ("a slots=4" + "a slots=2" is 6);
//     PRRTE refuses a second slots= for a host ("slots-given"). Repetition is the
//     one-line-per-slot form either way, and it makes the count given, as in PRRTE.
//   - max_slots belongs to the host: two different values for one host are an error,
//     and so is a total slot count above it, on whichever line it becomes true.
//   - PRRTE ignores stray words after the host ("a b" is host a) and ports; here both
//     are errors: a second word is most often a second host that would be silently lost.
//   - Relative entries (+n1, +e) are refused: they select from an allocation, which is
//     --host's job (PRRTE refuses them too when a hostfile builds the allocation).
//   - slots=0 is refused: a host that can take no work is a typo here, not a request.
//   - A NUL byte anywhere is an error (this is not a text file); a UTF-8 byte-order mark
//     at the start is skipped; high-bit bytes are fine in comments, never in names.
//   - PRRTE's '//' and '/* */' comments are not supported: '#' is the documented form
//     (PRRTE docs/hosts/hostfiles.rst), and since '/' is never part of a host name, such
//     a line is refused, never misread.
// The excluded names are returned beside the nodes, not subtracted from them: a
// filter (discover.cc) needs both, and an exclusion-only hostfile is a selection.
#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

#include "alloc/hostlist.h"
#include "alloc/source.h"
#include "util/strings.h"

namespace berth::alloc {
namespace internal {
// Defined in dash_host.cc: the one definition of a host name.
std::optional<std::pair<size_t, std::string>> host_name_problem(std::string_view name);
}  // namespace internal

namespace {

// A hostfile may name at most this many hosts through hostlist expressions, in all, and
// at most this many distinct hosts: the largest machines have ~10^5 nodes, and a bound
// keeps a one-line "n[1-999999999]" from allocating gigabytes.
constexpr size_t kMaxNames = 1'000'000;
constexpr uint64_t kMaxCount = INT32_MAX;

enum class Key { kSlots, kMaxSlots, kUser };

struct KeySpelling {
  std::string_view spelling;
  Key key;
};

constexpr KeySpelling kKeys[] = {
    {"slots", Key::kSlots},        {"cpu", Key::kSlots},          {"count", Key::kSlots},
    {"max_slots", Key::kMaxSlots}, {"max-slots", Key::kMaxSlots}, {"slots_max", Key::kMaxSlots},
    {"slots-max", Key::kMaxSlots}, {"cpu_max", Key::kMaxSlots},   {"cpu-max", Key::kMaxSlots},
    {"max_cpu", Key::kMaxSlots},   {"max-cpu", Key::kMaxSlots},   {"count_max", Key::kMaxSlots},
    {"count-max", Key::kMaxSlots}, {"max_count", Key::kMaxSlots}, {"max-count", Key::kMaxSlots},
    {"username", Key::kUser},      {"user-name", Key::kUser},     {"user_name", Key::kUser},
};

// A login name as ssh takes it: 1..255 bytes of [A-Za-z0-9._-], not starting with '-'
// (it would read as an option).
std::optional<std::string> user_problem(std::string_view user) {
  if (user.empty()) return "empty user name";
  if (user.size() > 255) return "user name longer than 255 bytes";
  for (char c : user) {
    if (!str::is_alnum(c) && c != '-' && c != '.' && c != '_') {
      return fmt::format("'{}' is not allowed in a user name", str::printable({&c, 1}));
    }
  }
  if (user[0] == '-') return "a user name cannot start with '-'";
  return std::nullopt;
}

// What one line says, before it is applied.
struct Line {
  bool exclude = false;
  std::string_view user;   // from user@host or username=
  std::string_view hosts;  // a name, an expression or a bracketed IPv6 address
  std::optional<int64_t> slots;
  std::optional<int64_t> max_slots;
};

class Parser {
 public:
  Parser(std::string_view origin, size_t max_names) : origin_(origin), max_names_(max_names) {}

  Result<Hostfile> parse(std::string_view text) {
    // A byte-order mark is what Windows editors put in front of UTF-8 text.
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
    size_t start = 0;
    while (start < text.size()) {
      ++line_no_;
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();  // no newline at the end
      BERTH_CHECK(line(text.substr(start, end - start)));
      start = end + 1;
    }
    return std::move(out_);
  }

 private:
  Failure error(std::string_view what) const {
    return fail(Errc::kInvalidInput, fmt::format("{}:{}: {}", origin_, line_no_, what));
  }

  Result<void> line(std::string_view raw) {
    if (raw.find('\0') != std::string_view::npos) {
      return error("NUL byte: a hostfile is text, and this is not");
    }
    if (size_t hash = raw.find('#'); hash != std::string_view::npos) raw = raw.substr(0, hash);
    raw = str::trim(raw);  // also the CR of a CRLF line end
    if (raw.empty()) return Ok{};
    BERTH_TRY(Line l, split(raw));
    if (l.exclude) return exclude(l.hosts);

    // The per-line checks come before anything is recorded, so that the message names
    // this line's own figures.
    if (l.slots && l.max_slots && *l.max_slots < *l.slots) {
      return error(fmt::format("max_slots={} is less than slots={}", *l.max_slots, *l.slots));
    }
    auto each = [&](std::string name) { return include(std::move(name), l); };
    return names(l.hosts, each);
  }

  // Splits a line into its entry and settings.
  Result<Line> split(std::string_view raw) {
    Line l;
    size_t i = 0;
    auto skip_ws = [&] {
      while (i < raw.size() && str::is_space(raw[i])) ++i;
    };
    while (i < raw.size() && !str::is_space(raw[i])) ++i;
    std::string_view entry = raw.substr(0, i);
    if (entry == "rank") return error("'rank N=host' is rankfile syntax, not a hostfile line");
    if (entry.find('=') != std::string_view::npos) {
      return error(fmt::format("'{}': a line starts with a host; key=value settings follow it",
                               str::printable(entry)));
    }
    if (entry[0] == '^') {
      entry.remove_prefix(1);
      l.exclude = true;
      if (entry.empty()) return error("'^' needs a host to exclude after it");
    }

    bool any_setting = false;
    std::optional<std::string_view> user_key;
    for (;;) {
      skip_ws();
      if (i == raw.size()) break;
      size_t key_start = i;
      while (i < raw.size() && !str::is_space(raw[i]) && raw[i] != '=') ++i;
      std::string_view key = raw.substr(key_start, i - key_start);
      skip_ws();
      if (key.empty()) return error("'=' without a key before it");
      if (i == raw.size() || raw[i] != '=') {
        return error(
            fmt::format("'{}' after the host is not key=value: a line names one "
                        "host (or one hostlist expression)",
                        str::printable(key)));
      }
      ++i;
      skip_ws();
      size_t value_start = i;
      while (i < raw.size() && !str::is_space(raw[i]) && raw[i] != '=') ++i;
      std::string_view value = raw.substr(value_start, i - value_start);
      if (value.empty()) return error(fmt::format("{}= needs a value", str::printable(key)));
      any_setting = true;

      std::string lower = str::to_lower(key);
      const KeySpelling* k = nullptr;
      for (const KeySpelling& s : kKeys) {
        if (s.spelling == lower) k = &s;
      }
      if (!k) {
        return error(
            fmt::format("unknown key '{}': a host takes slots=N, max_slots=M and "
                        "username=U",
                        str::printable(key)));
      }
      switch (k->key) {
        case Key::kSlots: {
          if (l.slots) return error(fmt::format("{}= repeats this line's slot count", lower));
          BERTH_TRY(l.slots, count(lower, value));
          break;
        }
        case Key::kMaxSlots: {
          if (l.max_slots) return error(fmt::format("{}= repeats this line's max_slots", lower));
          BERTH_TRY(l.max_slots, count(lower, value));
          break;
        }
        case Key::kUser:
          if (user_key) return error(fmt::format("{}= repeats this line's user", lower));
          if (auto p = user_problem(value)) {
            return error(fmt::format("{}={}: {}", lower, str::printable(value), *p));
          }
          user_key = value;
          break;
      }
    }

    if (l.exclude && any_setting) {
      return error(fmt::format("'^{}' excludes hosts; it takes no key=value settings",
                               str::printable(entry)));
    }
    if (entry[0] == '+') {
      return error(
          fmt::format("'{}' is relative node syntax, which selects from an "
                      "allocation: give it to --host, not in a hostfile",
                      str::printable(entry)));
    }
    // The '^' leads the whole entry (^user@host), so it is off before the user is split;
    // PRRTE once read "^u@h" as user "^u" and added the host it was asked to drop.
    if (size_t at = entry.find('@'); at != std::string_view::npos) {
      if (entry.find('@', at + 1) != std::string_view::npos) {
        return error(
            fmt::format("'{}' has more than one '@': write user@host", str::printable(entry)));
      }
      l.user = entry.substr(0, at);
      entry = entry.substr(at + 1);
      if (l.user.empty()) return error("nothing before '@': write user@host");
      if (entry.empty()) return error("nothing after '@': write user@host");
      if (entry[0] == '^') return error("'^' leads the whole entry: write ^user@host");
      if (auto p = user_problem(l.user)) {
        return error(fmt::format("user '{}': {}", str::printable(l.user), *p));
      }
    }
    if (user_key) {
      if (!l.user.empty() && l.user != *user_key) {
        return error(fmt::format("user '{}' from user@host disagrees with username={}",
                                 str::printable(l.user), str::printable(*user_key)));
      }
      l.user = *user_key;
    }
    l.hosts = entry;
    return l;
  }

  // A slot count: 1..2^31-1.
  Result<int64_t> count(std::string_view key, std::string_view value) const {
    auto v = str::parse_uint(value, kMaxCount);
    if (!v.ok() || *v == 0) {
      return error(fmt::format("{}={}: expected a whole number from 1 to {}", key,
                               str::printable(value), kMaxCount));
    }
    return static_cast<int64_t>(*v);
  }

  // Calls `each` with every name `hosts` stands for, validated.
  template <typename F>
  Result<void> names(std::string_view hosts, F&& each) {
    auto checked = [&](std::string name) -> Result<void> {
      if (auto p = internal::host_name_problem(name)) {
        if (name == hosts) return error(fmt::format("'{}': {}", str::printable(name), p->second));
        return error(fmt::format("'{}' expands to '{}': {}", str::printable(hosts),
                                 str::printable(name), p->second));
      }
      return each(std::move(name));
    };
    if (hosts.size() > 2 && hosts.front() == '[' && hosts.back() == ']' &&
        hosts.find(':') != std::string_view::npos) {
      return checked(std::string(hosts.substr(1, hosts.size() - 2)));  // [IPv6]
    }
    if (hosts.find_first_of("[],") == std::string_view::npos) return checked(std::string(hosts));
    auto expanded = hostlist::expand(hosts, max_names_ - names_used_);
    if (!expanded.ok()) {
      // Told apart by counting against the whole budget, not by reading the message;
      // counting allocates no names, where expanding again would make up to max_names_.
      if (hostlist::count(hosts, max_names_).ok()) {
        return error(
            fmt::format("'{}': the file's hostlist expressions name more than {} "
                        "hosts in all",
                        str::printable(hosts), max_names_));
      }
      return error(fmt::format("'{}': {}", str::printable(hosts), expanded.error().message()));
    }
    names_used_ += expanded->size();
    for (std::string& n : *expanded) BERTH_CHECK(checked(std::move(n)));
    return Ok{};
  }

  Result<void> exclude(std::string_view hosts) {
    return names(hosts, [&](std::string name) -> Result<void> {
      if (excluded_seen_.insert(name).second) out_.excluded.push_back(std::move(name));
      return Ok{};
    });
  }

  Result<void> include(std::string name, const Line& l) {
    auto [it, fresh] = index_.try_emplace(name, out_.nodes.size());
    if (fresh) {
      if (out_.nodes.size() >= max_names_) {
        return error(fmt::format("more than {} distinct hosts", max_names_));
      }
      NodeSpec s;
      s.name = std::move(name);
      out_.nodes.push_back(std::move(s));
    }
    NodeSpec& n = out_.nodes[it->second];
    // A max_slots with no slots= is the count too (PRRTE: "got_max && !SLOTS_GIVEN").
    int64_t add = l.slots ? *l.slots : l.max_slots ? *l.max_slots : 1;
    if (n.slots + add > static_cast<int64_t>(kMaxCount)) {
      return error(fmt::format("'{}' adds up to more than {} slots", n.name, kMaxCount));
    }
    n.slots += add;
    if (l.slots || l.max_slots || !fresh) n.slots_given = true;
    if (l.max_slots) {
      if (n.slots_max != 0 && n.slots_max != *l.max_slots) {
        return error(
            fmt::format("'{}' has max_slots={} here but max_slots={} on an earlier "
                        "line",
                        n.name, *l.max_slots, n.slots_max));
      }
      n.slots_max = *l.max_slots;
    }
    if (n.slots_max != 0 && n.slots > n.slots_max) {
      return error(fmt::format("'{}' now has {} slots in all, more than its max_slots={}", n.name,
                               n.slots, n.slots_max));
    }
    if (!l.user.empty()) {
      if (n.user.empty()) {
        n.user = std::string(l.user);
      } else if (n.user != l.user) {
        return error(fmt::format("'{}' has user '{}' here but '{}' on an earlier line", n.name,
                                 str::printable(l.user), n.user));
      }
    }
    return Ok{};
  }

  std::string_view origin_;
  size_t max_names_;
  size_t line_no_ = 0;
  Hostfile out_;
  std::unordered_map<std::string, size_t> index_;  // name -> index in out_.nodes
  std::unordered_set<std::string> excluded_seen_;
  size_t names_used_ = 0;  // names produced by hostlist expressions so far
};

}  // namespace

namespace internal {
// parse_hostfile with its bound as a parameter, so that tests can reach it cheaply.
Result<Hostfile> parse_hostfile(std::string_view text, std::string_view origin, size_t max_names) {
  return Parser(origin, max_names).parse(text);
}
}  // namespace internal

Result<Hostfile> parse_hostfile(std::string_view text, std::string_view origin) {
  return internal::parse_hostfile(text, origin, kMaxNames);
}

}  // namespace berth::alloc
