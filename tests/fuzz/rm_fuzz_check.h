// Contract checks shared by the resource-manager parser fuzzers: a parser may fail on
// any input, but a failure must be a clean kInvalidInput naming the origin, and a
// success must hand over nodes that every later stage can trust.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "alloc/node.h"
#include "alloc/rm_input.h"
#include "util/result.h"

namespace berth::alloc::fuzz {

inline constexpr std::string_view kOrigin = "fuzz-origin";

[[noreturn]] inline void contract_broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

inline void check_error(const Error& e) {
  if (e.code() != Errc::kInvalidInput) contract_broken("error code", e.message());
  if (e.message().rfind(kOrigin, 0) != 0) contract_broken("error names its origin", e.message());
  // Messages are one line, whatever bytes the input held.
  for (char c : e.message()) {
    if (c == '\n' || c == '\r' || c == '\0') contract_broken("one-line message", e.message());
  }
}

// Every node named validly, once, with a bounded authoritative count.
inline void check_nodes(const std::vector<NodeSpec>& nodes) {
  if (nodes.empty()) contract_broken("success has nodes", "");
  std::unordered_set<std::string> seen;
  for (const NodeSpec& n : nodes) {
    if (auto problem = host_name_problem(n.name)) contract_broken("valid name", *problem);
    if (!seen.insert(n.name).second) contract_broken("names unique", n.name);
    if (n.slots < 1 || n.slots > kMaxNodeSlots) contract_broken("slots in range", n.name);
    if (!n.slots_given) contract_broken("slots given", n.name);
  }
}

inline void check(const Result<std::vector<NodeSpec>>& r) {
  if (r.ok()) {
    check_nodes(*r);
  } else {
    check_error(r.error());
  }
}

}  // namespace berth::alloc::fuzz
