// Display of an Allocation as text (for people), XML and JSON (for programs).
// spec 01 §3 pins the JSON and XML; change them only with the spec.
#pragma once

#include <string>

#include "alloc/discover.h"

namespace berth::alloc {

std::string to_text(const Allocation& a);
std::string to_xml(const Allocation& a);   // well-formed: every attribute quoted and escaped
std::string to_json(const Allocation& a);  // one JSON document, 2-space indented

}  // namespace berth::alloc
