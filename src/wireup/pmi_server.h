// PmiServer: the PMI-1 and PMI-2 "simple" wire protocol, served to the ranks of local
// jobs over one socket per rank (spec 07 §3).
//
// This is the protocol MPICH's process manager (hydra) speaks with its ranks, and the
// one Debian's MPICH uses: the rank finds a connected socket at descriptor PMI_FD and
// its identity in PMI_RANK / PMI_SIZE, sends `cmd=init pmi_version=1 …` (PMI-1, lines
// of key=value words) or `pmi_version=2` (then length-prefixed `cmd=…;key=value;`
// messages), and from there asks for its kvsname, app number and universe size, puts
// its business card in the job's key-value space, meets the others at a barrier
// (fence) and reads theirs. PMI_process_mapping and the other job attributes come from
// the JobMap.
//
// One server per process, with one thread of its own that serves every socket of every
// job: add_job() opens the sockets, the caller passes each rank its end as a
// descriptor of the child (SpawnRequest::pass_fds), and remove_job() closes them. A
// barrier completes when every rank of the job has entered it. Init, finalize and
// abort (`cmd=abort`, PMI2 `abort`) are reported to the job's EventSink; spawn and
// name publishing are answered with an error (and reported as kRefused), never left
// unanswered, so a rank that asks is told at once rather than hanging. A request with
// bad arguments (no key, a value too long, another job's kvsname) is answered with a
// failure; bytes that are not PMI at all end that rank's connection and are reported
// as kRefused. Nothing a rank sends takes the server down.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"
#include "wireup/job_map.h"

namespace berth::wireup {

// What one job's ranks get: for rank r, the server's peer socket to pass to the
// child, and the variables to set in its environment for descriptor number `fd_in_child`.
struct PmiJob {
  // By rank; owned by the caller once returned: close after spawn. Close-on-exec, so
  // that no other child inherits one; the spawner's dup to descriptor 3… clears that.
  std::vector<int> child_fds;
  // PMI_FD=<fd_in_child>, PMI_RANK, PMI_SIZE and PMI_SPAWNED=0 for rank `rank`: all
  // MPICH's PMI-1 and PMI-2 clients need (spec 07 §3.4).
  std::vector<std::pair<std::string, std::string>> env(int rank, int fd_in_child) const;
  int size = 0;
};

class PmiServer {
 public:
  // Starts the server's thread. Fails only when the process cannot make a thread or
  // an epoll/eventfd descriptor.
  static Result<std::unique_ptr<PmiServer>> start();
  virtual ~PmiServer() = default;

  // Serves a new job; `sink` receives its ranks' events until remove_job returns. The
  // sink runs on the server's thread, must not block, and may call add_job/remove_job.
  // An event is delivered before the answer to the message that caused it is sent: a
  // rank's kFinalize reaches the sink before the rank can return from MPI_Finalize.
  // Fails (kInvalidInput) when the job id is in use or cannot be a kvsname (empty,
  // 256 bytes or more, a space, '=', ';' or a non-printable byte), when the job has no
  // ranks or a rank's node is not in the map; (kIo) when sockets cannot be made
  // (EMFILE named).
  virtual Result<PmiJob> add_job(const JobMap& map, EventSink sink) = 0;
  // Stops serving the job: closes its sockets, drops its key-value space. After this
  // returns the job's sink is never called again, also when the server's thread was
  // inside it (this waits for that call to return; from the sink itself it does not
  // wait). A rank blocked in MPI_Abort returns from it when its socket closes, so end
  // the job's processes first. Unknown ids are ignored.
  virtual void remove_job(const std::string& id) = 0;
  // Serves everything the ranks have already sent — to the end of each socket's
  // buffered bytes, end of file included — and delivers its events before returning
  // (bounded by a second). A rank that wrote `cmd=finalize` and exited without
  // waiting for the answer has its finalize seen by then: the supervisor calls this
  // before judging such an exit (spec 07 §1.1).
  virtual void sync() = 0;
};

}  // namespace berth::wireup
