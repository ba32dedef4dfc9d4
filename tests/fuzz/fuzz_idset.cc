// Fuzzes the idset codec (util/idset.h), the one reader of every id list: Flux RFC 22
// idsets, sysfs CPU lists and the command line's core sets ("0-3,7").
//
// Properties checked, abort() on any violation: no crash on any bytes; a failure is
// kInvalidInput with a "position N: " message; a success is ascending, disjoint,
// non-adjacent ranges within the bound, and encode() parses back to the same set; the
// expanded form (parse_ids, bounded by the CPU limit) is the same set, ascending, and
// encode_ids() writes it as encode() does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "util/idset.h"

namespace idset = berth::idset;

namespace {

void check_failure(const berth::Error& e) {
  if (e.code() != berth::Errc::kInvalidInput) abort();
  if (e.message().rfind("position ", 0) != 0) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = idset::parse(text);
  if (!r.ok()) {
    check_failure(r.error());
    if (idset::parse_ids(text).ok()) abort();  // one grammar: a looser bound never helps
    return 0;
  }
  for (size_t i = 0; i < r->size(); ++i) {
    const idset::Range& g = (*r)[i];
    if (g.first < 0 || g.first > g.last || g.last > idset::kMaxId) abort();
    if (i > 0 && (*r)[i - 1].last + 1 >= g.first) abort();  // disjoint and merged
  }
  if (idset::count(*r) > idset::kMaxId + 1) abort();
  auto again = idset::parse(idset::encode(*r));
  if (!again.ok() || *again != *r) abort();

  auto ids = idset::parse_ids(text);
  bool in_bound = r->empty() || r->back().last <= idset::kMaxCpuId;
  if (ids.ok() != in_bound) abort();
  if (!ids.ok()) {
    check_failure(ids.error());
    return 0;
  }
  if (static_cast<int64_t>(ids->size()) != idset::count(*r)) abort();
  for (size_t i = 1; i < ids->size(); ++i) {
    if ((*ids)[i - 1] >= (*ids)[i]) abort();
  }
  if (idset::encode_ids(*ids) != idset::encode(*r)) abort();
  return 0;
}
