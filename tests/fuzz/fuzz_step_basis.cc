// Fuzzes pipeline::find_step_basis (src/pipeline/executor.h): it reads the previous
// run's report, a file anything may have written, looking for one step.
//
// The input's first line is the step name, the rest the report. Properties checked,
// abort() on any violation:
//   - it never crashes, throws or runs away, whatever the bytes;
//   - what it returns is a JSON object's text;
//   - it finds nothing in a text that does not hold the step's opening bytes;
//   - nothing nested deeper than kMaxReportDepth is parsed (a report of a million '['
//     must not reach nlohmann's recursion).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pipeline/executor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view name = nl == std::string_view::npos ? in : in.substr(0, nl);
  std::string_view report = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  auto found = berth::pipeline::find_step_basis(report, name);
  if (!found) return 0;
  auto j = nlohmann::json::parse(*found, nullptr, false);
  if (j.is_discarded() || !j.is_object()) abort();
  if (report.find("{\"name\":") == std::string_view::npos) abort();
  return 0;
}
