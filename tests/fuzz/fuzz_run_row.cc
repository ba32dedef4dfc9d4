// Fuzzes a pipeline's history read back (spec 04 §8.1): runs rows and the steps
// objects they name are in a shared store that any writer — another build, a torn
// upload, a hostile one — may have filled, and `berth runs`, `report --run`, `methods`
// and the report page read them.
//
// The input is split at its first NUL into a runs row and the bytes of the object the
// row may name; both go into a MemoryStore. Properties checked, abort() on any
// violation:
//   - listing, reading back, the whole pipeline's steps and the computing runs never
//     crash, throw or run away, whatever the bytes;
//   - a run listed is found by its own id, and a run read back has a list of steps.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/run_history.h"
#include "store/memory_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace berth;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view row = in.substr(0, nul);
  std::string_view object = nul == std::string_view::npos ? "" : in.substr(nul + 1);
  store::MemoryStore s;
  (void)s.put_object(object);
  (void)s.put_row(store::row_address("runs", "2026-01-01T00:00:00Z-1"), row);
  (void)s.put_row(store::row_address("runs", "2026-01-01T00:00:01Z-2"), row);
  auto runs = pipeline::list_runs(s, "/p/pipeline.toml");
  if (!runs.ok()) return 0;
  for (const auto& r : *runs) {
    auto found = pipeline::find_run(*runs, r.id);
    if (!found.ok() || *found != &r) abort();
    auto whole = pipeline::read_run(s, r);
    if (whole.ok() && !(*whole)["steps"].is_array()) abort();
    if (whole.ok()) {
      (void)pipeline::whole_pipeline_steps(s, *whole, *runs);
      (void)pipeline::computing_runs(s, *whole, *runs);
    }
  }
  return 0;
}
