// Fuzzes the foreach table-file reader (CSV, spec 04 §3.1): any bytes give rows or an
// Error naming the file on one line, and rows are a header of valid, distinct keys with
// a column each, every column as long as the others.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "pipeline/foreach_table.h"
#include "pipeline/pipeline_file.h"

namespace {

[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace berth::pipeline;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = parse_table_file(text, "fuzz.csv", 100);
  if (!t.ok()) {
    const std::string& m = t.error().message();
    if (m.rfind("fuzz.csv", 0) != 0) broken("error names the file", m);
    if (m.find('\n') != std::string::npos) broken("one-line message", m);
    return 0;
  }
  if (t->keys.empty() || t->rows() == 0 || t->rows() > 100) broken("rows", "count");
  if (t->columns.size() != t->keys.size()) broken("a column per key", "");
  std::set<std::string> seen;
  for (const std::string& k : t->keys) {
    if (foreach_key_problem(k)) broken("keys are foreach keys", k);
    if (!seen.insert(k).second) broken("keys distinct", k);
  }
  for (const auto& c : t->columns) {
    if (c.size() != t->rows()) broken("columns of one length", "");
  }
  return 0;
}
