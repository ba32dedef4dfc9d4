// Fuzzes both LSF parsers on the same bytes: parse_lsf_hostfile (LSB_DJOB_HOSTFILE)
// and parse_lsf_mcpu_hosts (LSB_MCPU_HOSTS).
//
// Properties checked, abort() on any violation (rm_fuzz_check.h): no crash on any
// bytes; a failure is kInvalidInput, one line, starting with the origin; a success
// names each host once, validly, with 1..2^31-1 slots. For LSB_MCPU_HOSTS, writing
// the result back as "host count ..." parses to the same nodes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "alloc/source.h"
#include "rm_fuzz_check.h"

namespace alloc = berth::alloc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  alloc::fuzz::check(alloc::parse_lsf_hostfile(text, alloc::fuzz::kOrigin));

  auto mcpu = alloc::parse_lsf_mcpu_hosts(text, alloc::fuzz::kOrigin);
  alloc::fuzz::check(mcpu);
  if (mcpu.ok()) {
    std::string again;
    for (const auto& n : *mcpu) again += n.name + " " + std::to_string(n.slots) + " ";
    auto reparsed = alloc::parse_lsf_mcpu_hosts(again, alloc::fuzz::kOrigin);
    if (!reparsed.ok()) alloc::fuzz::contract_broken("round trip parses", again);
    if (reparsed->size() != mcpu->size()) alloc::fuzz::contract_broken("round trip", again);
    for (size_t i = 0; i < mcpu->size(); ++i) {
      if ((*reparsed)[i].name != (*mcpu)[i].name || (*reparsed)[i].slots != (*mcpu)[i].slots) {
        alloc::fuzz::contract_broken("round trip", again);
      }
    }
  }
  return 0;
}
