#include "store/object_store.h"

#include <fmt/format.h>

#include <array>

#include "util/sha256.h"
#include "util/strings.h"

namespace berth::store {
namespace {

// [A-Za-z0-9._:+=-], as a table: every step's cache look-up checks a 64-character key.
constexpr std::array<bool, 256> kAddressChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    auto ch = static_cast<char>(c);
    bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    t[static_cast<size_t>(c)] =
        alnum || ch == '.' || ch == '_' || ch == ':' || ch == '+' || ch == '=' || ch == '-';
  }
  return t;
}();

bool address_char(char c) { return kAddressChars[static_cast<unsigned char>(c)]; }

// Checks one '/'-separated component; `what` names the whole input for the message.
Result<void> check_component(std::string_view what, std::string_view c, size_t index) {
  auto bad = [&](std::string_view why) {
    return fail(Errc::kInvalidInput, fmt::format("row address \"{}\": component {}: {}",
                                                 str::printable(what, 120), index + 1, why));
  };
  if (c.empty()) return bad("empty (a doubled, leading or trailing '/')");
  if (c.size() > kMaxAddressComponent) {
    return bad(fmt::format("longer than {} characters", kMaxAddressComponent));
  }
  // A leading '.' would allow "." and ".." and would collide with the hidden temporary
  // files FileStore publishes from (spec 05 §4).
  if (c.front() == '.') return bad("starts with '.'");
  for (char ch : c) {
    if (!address_char(ch)) {
      return bad(fmt::format("character '{}' is not one of [A-Za-z0-9._:+=-]",
                             str::printable(std::string_view(&ch, 1))));
    }
  }
  return Ok{};
}

// "v<N>", N >= 1 without leading zeros (spec 05 §3).
bool version_component(std::string_view c) {
  if (c.size() < 2 || c[0] != 'v' || c[1] == '0') return false;
  for (char ch : c.substr(1)) {
    if (!str::is_digit(ch)) return false;
  }
  return c.size() <= 10;
}

// Shared by addresses and prefixes: `min_components` is 4 for an address
// (rows, version, kind, key) and 1 for a prefix.
Result<void> check_path(std::string_view s, size_t min_components) {
  if (s.size() > kMaxAddressBytes) {
    return fail(Errc::kInvalidInput, fmt::format("row address \"{}...\": longer than {} bytes",
                                                 str::printable(s, 60), kMaxAddressBytes));
  }
  // Component by component, without a vector of them: every step's cache look-up
  // checks an address.
  size_t count = 0;
  std::string_view first, second;
  for (size_t start = 0;; ++count) {
    size_t slash = s.find('/', start);
    std::string_view part = s.substr(start, slash == std::string_view::npos ? slash : slash - start);
    BERTH_CHECK(check_component(s, part, count));
    if (count == 0) first = part;
    if (count == 1) second = part;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  ++count;
  if (first != "rows") {
    return fail(Errc::kInvalidInput,
                fmt::format("row address \"{}\": must start with \"rows/\"", str::printable(s)));
  }
  if (count >= 2 && !version_component(second)) {
    return fail(Errc::kInvalidInput,
                fmt::format("row address \"{}\": second component must be the row format "
                            "version, \"v<N>\"",
                            str::printable(s)));
  }
  if (count < min_components) {
    return fail(
        Errc::kInvalidInput,
        fmt::format("row address \"{}\": expected rows/v<N>/<kind>/<key>", str::printable(s)));
  }
  return Ok{};
}

}  // namespace

std::string object_name_of(std::string_view bytes) {
  return std::string(kObjectNamePrefix) + sha256_hex(bytes);
}

Result<void> check_object_name(std::string_view name) {
  if (name.substr(0, kObjectNamePrefix.size()) != kObjectNamePrefix ||
      !is_sha256_hex(name.substr(std::min(name.size(), kObjectNamePrefix.size())))) {
    return fail(Errc::kInvalidInput,
                fmt::format("object name \"{}\": expected sha256:<64 lower-case hex digits>",
                            str::printable(name, 80)));
  }
  return Ok{};
}

std::string row_address(std::string_view kind, std::string_view key, unsigned version) {
  return fmt::format("rows/v{}/{}/{}", version, kind, key);
}

Result<void> check_row_address(std::string_view address) { return check_path(address, 4); }

Result<void> check_row_prefix(std::string_view prefix) {
  if (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  return check_path(prefix, 1);
}

namespace {
Failure not_collectable(const ObjectStore& s) {
  return fail(Errc::kUnsupported, s.describe() + ": this store cannot be collected");
}
}  // namespace

Result<std::vector<StoreEntry>> ObjectStore::list_objects() { return not_collectable(*this); }
Result<std::vector<StoreEntry>> ObjectStore::list_row_entries(std::string_view) {
  return not_collectable(*this);
}
Result<std::vector<StoreEntry>> ObjectStore::list_debris() { return not_collectable(*this); }
Result<std::vector<std::string>> ObjectStore::collect(
    EntryKind, const std::vector<std::string>&, int64_t,
    const std::function<Result<std::set<std::string>>()>&) {
  return not_collectable(*this);
}

}  // namespace berth::store
