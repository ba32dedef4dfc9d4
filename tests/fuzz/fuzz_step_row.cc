// Fuzzes pipeline::read_step_row (src/pipeline/step_row.h): a step row may hold any
// bytes a store returned, and a no-op rerun reads one per step.
//
// Properties checked, abort() on any violation:
//   - reading never crashes, throws or runs away, whatever the bytes;
//   - it agrees with a full parse: a digest means the bytes are one JSON object with
//     an "outputs" member; and when the full parse has no key given twice (nlohmann
//     keeps the last, the reader merges), every output record the full parse holds as
//     an object is in the digest, with the same string fields, and no other; and its
//     top-level "log" is the digest's when it is a string.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pipeline/step_row.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto d = berth::pipeline::read_step_row(text);
  nlohmann::json full = nlohmann::json::parse(text, nullptr, false);
  if (d) {
    if (full.is_discarded() || !full.is_object() || !full.contains("outputs")) abort();
  }
  if (full.is_discarded() || !full.is_object()) return 0;
  // The dump of the full parse has no duplicate keys: on it, the reader must agree
  // with the document exactly.
  std::string clean = full.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  auto c = berth::pipeline::read_step_row(clean);
  nlohmann::json again = nlohmann::json::parse(clean, nullptr, false);
  if (again.is_discarded()) return 0;  // replaced invalid UTF-8 that does not re-parse
  bool usable = again.contains("outputs") && again["outputs"].is_object();
  if (static_cast<bool>(c) != usable) abort();
  if (!c) return 0;
  size_t objects = 0;
  for (auto& [name, rec] : again["outputs"].items()) {
    if (!rec.is_object()) {
      if (!c->malformed.count(name)) abort();
      continue;
    }
    ++objects;
    auto it = c->outputs.find(name);
    if (it == c->outputs.end() || c->malformed.count(name)) abort();
    size_t strings = 0;
    for (auto& [field, v] : rec.items()) {
      if (!v.is_string()) continue;
      ++strings;
      auto f = it->second.find(field);
      if (f == it->second.end() || f->second != v.get<std::string>()) abort();
    }
    if (strings != it->second.size()) abort();
  }
  if (objects != c->outputs.size()) abort();
  // The top-level "log" when it is a string, and nothing else.
  std::string log = again.contains("log") && again["log"].is_string() ? again["log"].get<std::string>() : "";
  if (c->log != log) abort();
  return 0;
}
