// LSF: the job's hosts from the file LSB_DJOB_HOSTFILE names (one line per slot), or
// else from LSB_MCPU_HOSTS ("hostA 4 hostB 2").
#include <fmt/format.h>

#include "alloc/rm_input.h"
#include "alloc/source.h"
#include "util/strings.h"

namespace berth::alloc {

Result<std::vector<NodeSpec>> parse_lsf_hostfile(std::string_view text, std::string_view origin) {
  // The same grammar as a PBS nodefile: LSF writes each host once per slot.
  return parse_host_per_line(text, origin);
}

Result<std::vector<NodeSpec>> parse_lsf_mcpu_hosts(std::string_view text, std::string_view origin) {
  auto fields = str::split_ws(text);
  // Positions are 1-based byte offsets into the value; split_ws returns views into it.
  auto pos_of = [&](std::string_view f) { return static_cast<size_t>(f.data() - text.data()) + 1; };
  if (fields.empty()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: no hosts in '{}'", origin, str::printable(text)));
  }
  SlotTally tally;
  for (size_t i = 0; i < fields.size(); i += 2) {
    std::string_view host = fields[i];
    if (auto problem = host_name_problem(host)) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: position {}: {}", origin, pos_of(host), *problem));
    }
    // An odd number of fields leaves the last host without a count. Guessing 1 would
    // hide a truncated value (LSF cuts nothing, but a copy through a shell might).
    if (i + 1 == fields.size()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: position {}: host '{}' has no slot count after it", origin,
                              pos_of(host), str::printable(host)));
    }
    std::string_view count_text = fields[i + 1];
    auto count = str::parse_uint(count_text, static_cast<uint64_t>(kMaxNodeSlots));
    if (!count.ok()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: position {}: slot count for '{}': {}", origin,
                              pos_of(count_text), str::printable(host), count.error().message()));
    }
    if (*count == 0) {
      return fail(Errc::kInvalidInput, fmt::format("{}: position {}: host '{}' has 0 slots", origin,
                                                   pos_of(count_text), str::printable(host)));
    }
    auto added = tally.add(host, static_cast<int64_t>(*count));
    if (!added.ok()) {
      return added.error().with_context(fmt::format("{}: position {}", origin, pos_of(host)));
    }
  }
  return std::move(tally).take();
}

SourceResult discover_lsf(const Input& in) {
  // Either host variable makes this an LSF job; LSB_JOBID alone does not (PRRTE gates
  // on LSB_JOBID). A bare LSB_JOBID carries no allocation to read, so answering "not
  // mine" lets the next source answer instead of failing a run that never needed LSF.
  BERTH_TRY(auto hostfile, get_required_value(in.env, "LSB_DJOB_HOSTFILE"));
  BERTH_TRY(auto mcpu, get_required_value(in.env, "LSB_MCPU_HOSTS"));
  if (!hostfile && !mcpu) return std::optional<Found>();
  BERTH_TRY(std::string job_id, get_job_id(in.env, "LSB_JOBID"));

  std::vector<NodeSpec> nodes;
  if (hostfile) {
    // The hostfile is preferred: it has one line per slot and no length limit, while
    // LSB_MCPU_HOSTS is an environment variable. When it is set but cannot be read
    // the job fails rather than falling back to LSB_MCPU_HOSTS: the two should agree,
    // and a scheduler input that is present but broken is never papered over.
    BERTH_TRY(std::string text, read_named_file("LSB_DJOB_HOSTFILE", *hostfile));
    BERTH_TRY(nodes, parse_lsf_hostfile(text, file_origin("LSB_DJOB_HOSTFILE", *hostfile)));
  } else {
    BERTH_TRY(nodes, parse_lsf_mcpu_hosts(*mcpu, "LSB_MCPU_HOSTS"));
  }
  return std::optional<Found>(Found::listed(std::move(nodes), std::move(job_id)));
}

}  // namespace berth::alloc
