#include "pipeline/canonical.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "util/sha256.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

std::string lines_sorted(std::string_view bytes) {
  if (bytes.empty()) return {};
  if (bytes.back() == '\n') bytes.remove_suffix(1);  // the final newline ends the last line
  std::vector<std::string_view> lines = str::split(bytes, '\n');
  // std::string_view's comparison is char_traits<char>::compare, which orders as
  // unsigned bytes (like memcmp): bytewise, independent of locale and of char's sign.
  std::sort(lines.begin(), lines.end());
  std::string out;
  out.reserve(bytes.size() + 1);
  for (std::string_view l : lines) {
    out.append(l);
    out.push_back('\n');
  }
  return out;
}

Result<std::string> json_canonical(std::string_view bytes) {
  if (str::json_deeper_than(bytes, kMaxJsonDepth)) {
    return fail(Errc::kInvalidInput,
                fmt::format("json: nested more than {} levels deep", kMaxJsonDepth));
  }
  // nlohmann reports errors by exception; none leaves this function.
  try {
    nlohmann::json doc = nlohmann::json::parse(bytes.begin(), bytes.end());
    // The default object type is a std::map, so dump() writes keys sorted bytewise.
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    return fail(Errc::kInvalidInput, fmt::format("json: {}", e.what()));
  } catch (const std::exception& e) {
    return fail(Errc::kInternal, fmt::format("json: {}", e.what()));
  }
}

}  // namespace

CanonicalForm CanonicalForm::command(std::vector<std::string> argv) {
  CanonicalForm f;
  f.kind = Kind::kCommand;
  f.argv = std::move(argv);
  return f;
}

std::string CanonicalForm::name() const {
  switch (kind) {
    case Kind::kBytes:
      return "bytes";
    case Kind::kLinesSorted:
      return "lines-sorted";
    case Kind::kJson:
      return "json";
    case Kind::kCommand:
      return "command:" +
             nlohmann::json(argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return "bytes";
}

Result<CanonicalForm> parse_canonical_form(std::string_view text) {
  CanonicalForm f;
  if (text == "bytes") return f;
  if (text == "lines-sorted") {
    f.kind = CanonicalForm::Kind::kLinesSorted;
    return f;
  }
  if (text == "json") {
    f.kind = CanonicalForm::Kind::kJson;
    return f;
  }
  if (text.substr(0, 8) == "command:") {
    std::string_view rest = str::trim(text.substr(8));
    std::vector<std::string> argv;
    if (!rest.empty() && rest.front() == '[') {
      nlohmann::json a = nlohmann::json::parse(rest.begin(), rest.end(), nullptr, false);
      if (!a.is_array()) {
        return fail(Errc::kInvalidInput,
                    fmt::format("canonical form \"{}\": not a JSON array of strings",
                                str::printable(text)));
      }
      for (const auto& w : a) {
        if (!w.is_string()) {
          return fail(Errc::kInvalidInput,
                      fmt::format("canonical form \"{}\": not a JSON array of strings",
                                  str::printable(text)));
        }
        argv.push_back(w.get<std::string>());
      }
    } else {
      for (std::string_view w : str::split_ws(rest)) argv.emplace_back(w);
    }
    if (argv.empty()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("canonical form \"{}\": no command", str::printable(text)));
    }
    return CanonicalForm::command(std::move(argv));
  }
  return fail(Errc::kInvalidInput,
              fmt::format("canonical form \"{}\": expected bytes, lines-sorted, json or "
                          "command:ARGV",
                          str::printable(text)));
}

Result<std::string> canonicalize(const CanonicalForm& form, std::string_view bytes,
                                 const CommandHook& hook) {
  switch (form.kind) {
    case CanonicalForm::Kind::kBytes:
      return std::string(bytes);
    case CanonicalForm::Kind::kLinesSorted:
      return lines_sorted(bytes);
    case CanonicalForm::Kind::kJson:
      return json_canonical(bytes);
    case CanonicalForm::Kind::kCommand:
      if (!hook) {
        return fail(Errc::kUnsupported,
                    fmt::format("canonical form {}: no command runner supplied", form.name()));
      }
      return hook(form.argv, bytes);
  }
  return fail(Errc::kInternal, "canonicalize: unknown form");
}

Result<CanonicalHash> canonical_hash(const CanonicalForm& form, std::string_view bytes,
                                     const CommandHook& hook) {
  CanonicalHash h;
  h.form = form.name();
  if (form.kind == CanonicalForm::Kind::kBytes) {
    h.hash = "sha256:" + sha256_hex(bytes);  // no copy: the object's own name
    return h;
  }
  BERTH_TRY(std::string canonical, canonicalize(form, bytes, hook));
  h.hash = "sha256:" + sha256_hex(canonical);
  return h;
}

}  // namespace berth::pipeline
