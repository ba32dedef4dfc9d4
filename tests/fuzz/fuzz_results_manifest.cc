// Fuzzes pipeline::parse_results_manifest (spec 04 §7.5): a results directory's
// manifest is a file in the user's folder, which anything may have written or cut short.
//
// Properties checked, abort() on any violation:
//   - parsing never crashes, throws or runs away, whatever the bytes;
//   - what it parsed, written back and parsed again, is the same manifest, and writing
//     that again gives the same text (the manifest is rewritten every run).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/results_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace berth::pipeline;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ResultsManifest m = parse_results_manifest(text);
  std::string once = results_manifest_text(m);
  ResultsManifest again = parse_results_manifest(once);
  if (again.pipeline != m.pipeline || again.results != m.results) abort();
  if (results_manifest_text(again) != once) abort();
  return 0;
}
