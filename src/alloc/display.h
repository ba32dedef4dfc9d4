// Display of an Allocation as text (for people), XML and JSON (for programs).
// spec 01 §3 pins the JSON and XML; change them only with the spec.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "alloc/discover.h"

namespace berth::alloc {

std::string to_text(const Allocation& a);
std::string to_xml(const Allocation& a);   // well-formed: every attribute quoted and escaped
std::string to_json(const Allocation& a);  // one JSON document, 2-space indented

// to_json(a), handed to `out` a piece at a time, in order: a 10^5-node allocation is
// 20 MB of JSON, written as it is made rather than held whole. The bytes are what
// nlohmann's dump(2) writes (display_test.cc holds them to it).
void write_json(const Allocation& a, const std::function<void(std::string_view)>& out);

}  // namespace berth::alloc
