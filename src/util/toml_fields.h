// TomlFields: one TOML table read as typed keys, for every TOML file berth reads (the
// machine descriptions, topo/machine.cc; the pipeline file, spec 04 §1). Every key
// taken is remembered, so that finish() reports any key nobody asked for: a misspelt
// setting is an error, never silently ignored.
//
// Every error names the file, the line:column toml++ gives (of the value that is
// wrong, or of the table that lacks a key), the context the reader set (a step, say),
// the key by its full dotted name, and what is wrong, all kInvalidInput:
//
//   p.toml:4:6: step 's': rn: unknown key
//   data/machines/aurora.toml:15:9: cores_per_node.value: 0 is out of range [1, 65536]
//
// toml++ reports syntax errors by throwing; parse_toml() is where berth lets it throw,
// and nothing escapes it (STYLE: libraries return values).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth {

// Parses `text` as TOML. Fails (kInvalidInput) with "<path>:<line>:<col>: <what toml++
// says>" on a syntax error, "<path>: cannot be read: ..." on any other failure. The
// size bound is the caller's to check first.
Result<toml::table> parse_toml(std::string_view text, const std::string& path);

// "a string", "an integer", "a table", ... for messages.
const char* toml_type_name(const toml::node& n);

// How large a value may be; past these a file is not what it claims to be.
struct TomlLimits {
  size_t max_string_bytes = 64 * 1024;
  size_t max_array_items = 1 << 16;
};

class TomlFields {
 public:
  // Reads `t`, from `file`. `context` leads every message's key ("step 'x'"); `prefix`
  // is the dotted name of `t` itself ("" for the document, "launcher", "detect[1]").
  // `t` and `file` must outlive this.
  TomlFields(const toml::table& t, const std::string& file, TomlLimits limits,
             std::string context = "", std::string prefix = "");

  // The full dotted name of key `k` ("launcher.args").
  std::string key(std::string_view k) const;

  // An error about key `k` ("" for the table itself), placed at `at` (the table when
  // null): "<file>:<line>:<col>: <context>: <key>: <what>".
  Failure error(const toml::node* at, std::string_view k, std::string_view what) const;
  // The same, placed at `k`'s value where the table has one, else at the table.
  Failure error(std::string_view k, std::string_view what) const;
  // "<key>: must be <want>, not <what n is>".
  Failure wrong_type(std::string_view k, std::string_view want, const toml::node& n) const;

  // Key `k`'s value, or null when absent; marks `k` as read.
  const toml::node* node(std::string_view k);
  bool has(std::string_view k) const { return t_.contains(k); }

  // Typed keys: nullopt (or null) when absent, an error when present but not of the
  // type asked for or past the limits.
  Result<std::optional<std::string>> string(std::string_view k);
  // A string that must be given and not blank: "missing", "must not be empty".
  Result<std::string> required_string(std::string_view k);
  // Strings; `allow_empty` false makes [] an error.
  Result<std::optional<std::vector<std::string>>> strings(std::string_view k,
                                                          bool allow_empty = true);
  // An integer within [min, max].
  Result<std::optional<int64_t>> integer(std::string_view k, int64_t min, int64_t max);
  Result<std::optional<bool>> boolean(std::string_view k);
  Result<const toml::table*> table(std::string_view k);

  // The checks above for a value in hand (an array's item, a key found by iterating),
  // named `k` in messages.
  Result<std::string> string_of(const toml::node* n, std::string_view k) const;
  Result<std::vector<std::string>> strings_of(const toml::node* n, std::string_view k,
                                              bool allow_empty) const;

  // The fields of `t`, the value of this table's key `k`, with the same file, context
  // and limits.
  TomlFields sub(const toml::table& t, std::string_view k) const;

  // Fails on the first key of the table (in file order) that nobody read: "unknown key",
  // with "(did you mean 'x'?)" when one of `known` (the keys the table may hold) is close.
  Result<void> finish(const std::vector<std::string_view>& known = {}) const;

  const TomlLimits& limits() const { return limits_; }

 private:
  const toml::table& t_;
  const std::string& file_;
  TomlLimits limits_;
  std::string context_;
  std::string prefix_;
  // The values read, by address: finish() asks of each of the table's own. A key
  // that is absent is not recorded (a step's table is asked for twenty keys and holds a
  // few; a set of their names cost an allocation each).
  std::vector<const toml::node*> seen_;
};

}  // namespace berth
