// PBS Pro / Torque: the job's hosts from the file PBS_NODEFILE names, one line per slot.
#include "alloc/rm_input.h"
#include "alloc/source.h"

namespace berth::alloc {

Result<std::vector<NodeSpec>> parse_pbs_nodefile(std::string_view text, std::string_view origin) {
  // PBS writes a host once per slot it granted there (a job of 2 nodes x 4 cpus gets 8
  // lines), so every occurrence is a slot and repeats sum; the host keeps the position
  // of its first line. A nodefile that names no host at all is an error, not an empty
  // allocation: PBS never writes one, and running on nothing would be silently wrong.
  return parse_host_per_line(text, origin);
}

SourceResult discover_pbs(const Input& in) {
  // PBS_NODEFILE alone decides whether this is a PBS job, as in PRRTE; PBS_JOBID only
  // supplies the id and may be absent.
  BERTH_TRY(auto path, get_required_value(in.env, "PBS_NODEFILE"));
  if (!path) return std::optional<Found>();
  BERTH_TRY(std::string job_id, get_job_id(in.env, "PBS_JOBID"));
  BERTH_TRY(std::string text, read_named_file("PBS_NODEFILE", *path));
  BERTH_TRY(auto nodes, parse_pbs_nodefile(text, file_origin("PBS_NODEFILE", *path)));
  return std::optional<Found>(Found::listed(std::move(nodes), std::move(job_id)));
}

}  // namespace berth::alloc
