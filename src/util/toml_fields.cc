#include "util/toml_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "util/strings.h"
#include "util/suggest.h"

namespace berth {

Result<toml::table> parse_toml(std::string_view text, const std::string& path) {
  try {
    return toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return fail(Errc::kInvalidInput, fmt::format("{}:{}:{}: {}", path, where.line, where.column,
                                                 str::printable(e.description(), 200)));
  } catch (const std::exception& e) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: cannot be read: {}", path, str::printable(e.what(), 200)));
  }
}

const char* toml_type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date or time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

TomlFields::TomlFields(const toml::table& t, const std::string& file, TomlLimits limits,
                       std::string context, std::string prefix)
    : t_(t),
      file_(file),
      limits_(limits),
      context_(std::move(context)),
      prefix_(std::move(prefix)) {}

std::string TomlFields::key(std::string_view k) const {
  return prefix_.empty() ? std::string(k) : prefix_ + "." + std::string(k);
}

Failure TomlFields::error(const toml::node* at, std::string_view k, std::string_view what) const {
  const auto& begin = (at ? *at : static_cast<const toml::node&>(t_)).source().begin;
  // A node toml++ made rather than read has no position; its file still names it.
  std::string where = begin.line ? fmt::format("{}:{}:{}", file_, begin.line, begin.column) : file_;
  std::string ctx = context_.empty() ? "" : context_ + ": ";
  std::string name = k.empty() ? prefix_ : key(k);
  return fail(Errc::kInvalidInput,
              fmt::format("{}: {}{}{}", where, ctx, name.empty() ? "" : name + ": ", what));
}

Failure TomlFields::error(std::string_view k, std::string_view what) const {
  return error(t_.get(k), k, what);
}

Failure TomlFields::wrong_type(std::string_view k, std::string_view want,
                               const toml::node& n) const {
  return error(&n, k, fmt::format("must be {}, not {}", want, toml_type_name(n)));
}

const toml::node* TomlFields::node(std::string_view k) {
  const toml::node* n = t_.get(k);
  if (n != nullptr) seen_.push_back(n);
  return n;
}

Result<std::optional<std::string>> TomlFields::string(std::string_view k) {
  const toml::node* n = node(k);
  if (!n) return std::optional<std::string>();
  BERTH_TRY(std::string s, string_of(n, k));
  return std::optional<std::string>(std::move(s));
}

Result<std::string> TomlFields::required_string(std::string_view k) {
  BERTH_TRY(std::optional<std::string> s, string(k));
  if (!s) return error(nullptr, k, "missing");
  if (str::trim(*s).empty()) return error(k, "must not be empty");
  return std::move(*s);
}

Result<std::string> TomlFields::string_of(const toml::node* n, std::string_view k) const {
  const auto* s = n->as_string();
  if (!s) return wrong_type(k, "a string", *n);
  if (s->get().size() > limits_.max_string_bytes) {
    return error(n, k, fmt::format("longer than {} bytes", limits_.max_string_bytes));
  }
  return s->get();
}

Result<std::optional<std::vector<std::string>>> TomlFields::strings(std::string_view k,
                                                                    bool allow_empty) {
  const toml::node* n = node(k);
  if (!n) return std::optional<std::vector<std::string>>();
  BERTH_TRY(std::vector<std::string> v, strings_of(n, k, allow_empty));
  return std::optional<std::vector<std::string>>(std::move(v));
}

Result<std::vector<std::string>> TomlFields::strings_of(const toml::node* n, std::string_view k,
                                                        bool allow_empty) const {
  const auto* a = n->as_array();
  if (!a) return wrong_type(k, "an array of strings", *n);
  if (a->size() > limits_.max_array_items) {
    return error(n, k, fmt::format("more than {} items", limits_.max_array_items));
  }
  if (a->empty() && !allow_empty) return error(n, k, "must not be empty");
  std::vector<std::string> out;
  for (const toml::node& item : *a) {
    if (!item.is_string()) {
      return error(&item, k, fmt::format("items must be strings, not {}", toml_type_name(item)));
    }
    BERTH_TRY(std::string s, string_of(&item, k));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::optional<int64_t>> TomlFields::integer(std::string_view k, int64_t min, int64_t max) {
  const toml::node* n = node(k);
  if (!n) return std::optional<int64_t>();
  const auto* i = n->as_integer();
  if (!i) return wrong_type(k, "an integer", *n);
  int64_t v = i->get();
  if (v < min || v > max) {
    return error(n, k, fmt::format("{} is out of range [{}, {}]", v, min, max));
  }
  return std::optional<int64_t>(v);
}

Result<std::optional<bool>> TomlFields::boolean(std::string_view k) {
  const toml::node* n = node(k);
  if (!n) return std::optional<bool>();
  const auto* b = n->as_boolean();
  if (!b) return wrong_type(k, "a boolean", *n);
  return std::optional<bool>(b->get());
}

Result<const toml::table*> TomlFields::table(std::string_view k) {
  const toml::node* n = node(k);
  if (!n) return static_cast<const toml::table*>(nullptr);
  const auto* t = n->as_table();
  if (!t) return wrong_type(k, "a table", *n);
  return t;
}

TomlFields TomlFields::sub(const toml::table& t, std::string_view k) const {
  return TomlFields(t, file_, limits_, context_, key(k));
}

Result<void> TomlFields::finish(const std::vector<std::string_view>& known) const {
  // Every key of the table that nobody read is an error: a misspelt key would
  // otherwise be a silently ignored setting.
  std::vector<const toml::node*> seen = seen_;
  std::sort(seen.begin(), seen.end());
  for (const auto& [k, v] : t_) {
    if (!std::binary_search(seen.begin(), seen.end(), &v)) {
      return error(&v, str::printable(k.str()), "unknown key" + str::did_you_mean(k.str(), known));
    }
  }
  return Ok{};
}

}  // namespace berth
