// Grid Engine (SGE, Son of Grid Engine, Univa/Altair): the job's hosts from the file
// PE_HOSTFILE names, "host slots queue processors" per line.
#include <fmt/format.h>

#include "alloc/rm_input.h"
#include "alloc/source.h"
#include "util/strings.h"

namespace berth::alloc {

Result<std::vector<NodeSpec>> parse_pe_hostfile(std::string_view text, std::string_view origin) {
  // Grid Engine writes "node1 2 all.q@node1 UNDEFINED": host, slots, the queue
  // instance and a processor range (or UNDEFINED / <NULL>). Only the first two mean
  // anything to berth; the other two are optional so that hand-written and older
  // files work, and are not checked because nothing reads them. A fifth field means
  // the file is not what we think it is.
  SlotTally tally;
  size_t line_no = 0;
  for (std::string_view line : str::split(text, '\n')) {
    ++line_no;
    auto fields = str::split_ws(line);  // any run of blanks separates; CR is a blank
    if (fields.empty()) continue;
    auto where = [&] { return fmt::format("{}:{}", origin, line_no); };
    if (fields.size() < 2 || fields.size() > 4) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: expected 'host slots [queue [processors]]', found {} "
                              "field(s) in '{}'",
                              where(), fields.size(), str::printable(str::trim(line))));
    }
    if (auto problem = host_name_problem(fields[0])) {
      return fail(Errc::kInvalidInput, fmt::format("{}: {}", where(), *problem));
    }
    auto slots = str::parse_uint(fields[1], static_cast<uint64_t>(kMaxNodeSlots));
    if (!slots.ok()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: slot count for '{}': {}", where(), str::printable(fields[0]),
                              slots.error().message()));
    }
    if (*slots == 0) {
      // Grid Engine never grants a host zero slots; a zero is damage, not a request.
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: host '{}' has 0 slots", where(), str::printable(fields[0])));
    }
    // A host appears once per queue it was granted slots in (all.q and long.q on the
    // same node): its slots sum, and it keeps the position of its first line.
    auto added = tally.add(fields[0], static_cast<int64_t>(*slots));
    if (!added.ok()) return added.error().with_context(where());
  }
  if (tally.empty()) {
    return fail(Errc::kInvalidInput, fmt::format("{}: no hosts in the file", origin));
  }
  return std::move(tally).take();
}

SourceResult discover_gridengine(const Input& in) {
  // Grid Engine sets JOB_ID in every job and PE_HOSTFILE only in parallel-environment
  // jobs. So JOB_ID without PE_HOSTFILE is a serial job: not ours, the next source
  // (hosts, the local node) is right. PE_HOSTFILE without JOB_ID is an environment
  // that is half there: PRRTE quietly passes such a job to the next source; berth
  // refuses it, because running a parallel job on the local host alone is wrong in a
  // way nobody would notice.
  BERTH_TRY(auto path, get_required_value(in.env, "PE_HOSTFILE"));
  if (!path) return std::optional<Found>();
  BERTH_TRY(auto job_var, get_required_value(in.env, "JOB_ID"));
  if (!job_var) {
    return fail(Errc::kInvalidInput,
                "PE_HOSTFILE is set but JOB_ID is not: not a complete Grid Engine job "
                "environment");
  }
  BERTH_TRY(std::string job_id, get_job_id(in.env, "JOB_ID"));
  // An array task's id is JOB_ID.SGE_TASK_ID, as qstat shows it. Grid Engine sets
  // SGE_TASK_ID to "undefined" outside array jobs, hence the digits-only test.
  BERTH_TRY(auto task, in.env.get_bounded("SGE_TASK_ID"));
  if (task && str::parse_uint(*task, UINT32_MAX).ok()) job_id += "." + *task;

  BERTH_TRY(std::string text, read_named_file("PE_HOSTFILE", *path));
  BERTH_TRY(auto nodes, parse_pe_hostfile(text, file_origin("PE_HOSTFILE", *path)));
  return std::optional<Found>(Found::listed(std::move(nodes), std::move(job_id)));
}

}  // namespace berth::alloc
