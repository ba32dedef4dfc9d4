// cpulist: the kernel's notation for a set of CPU ids, as sysfs writes it
// (`/sys/devices/system/cpu/online`, `cpu<N>/topology/thread_siblings_list`) and as
// `--affinity LIST` and `Cpus_allowed_list` give it.
//
//   "0-3,8"      -> {0, 1, 2, 3, 8}
//   "0,128\n"    -> {0, 128} (sysfs ends every file with a newline)
//   "" or "\n"   -> {} (an empty set; `offline` reads like this)
//
// Elements are "ID" or "ID-ID", decimal digits only, in any order; a set is a set, so
// repeated or overlapping elements are merged rather than refused (nothing is counted
// from the way it was written). Failures (kInvalidInput; the message gives the 1-based
// position, not the input's name, which callers add): an empty element, a non-digit, a
// reversed range, an id above the limit, and the kernel's input-only stride syntax
// ("0-31:2/4"), which sysfs never writes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::topo {

// The largest CPU id accepted. Linux's NR_CPUS tops out at 8192 today; the margin
// keeps a bogus "0-4000000000" from expanding into gigabytes.
inline constexpr int kMaxCpuId = 65535;

// Parses `text` (surrounding whitespace ignored) into ascending, distinct ids.
Result<std::vector<int>> parse_cpulist(std::string_view text, int max_id = kMaxCpuId);

// Writes ascending distinct ids back in canonical form: "0-3,8"; "" for none.
std::string encode_cpulist(const std::vector<int>& ids);

}  // namespace berth::topo
