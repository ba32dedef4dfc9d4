// Wireup: what a job's ranks get so that an MPI program among them runs as one job
// (spec 07). The launcher's one entry point into this library.
//
// serve() puts a job on the process's servers — the embedded PMIx server, the PMI-1/2
// socket server, or both (the default: an Open MPI rank asks PMIx, an MPICH rank PMI,
// and a program that is not MPI asks neither; a job of one rank gets neither under
// the default, since a singleton is already right) — and returns, per
// rank, the variables to set before the user's environment directives and the socket
// to pass as the rank's descriptor 3. The job is taken off the servers when the
// returned JobWire is destroyed; its sink is never called after that.
//
// Both servers are started on first use and kept for the process's life, so every job
// and pipeline step of a run shares them. A server that cannot start fails a job that
// asked for it by name (--mpi pmix); under the default the job runs with the other and
// JobWire::notices says what MPI programs will not get.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "wireup/job_map.h"
#include "wireup/mode.h"
#include "wireup/pmix_server.h"

namespace berth::wireup {

// The descriptor number a rank finds its PMI socket at (SpawnRequest::pass_fds[0]).
inline constexpr int kPmiFdInChild = 3;

class JobWire {
 public:
  virtual ~JobWire() = default;
  // The variables rank `rank` gets, in order (PMIx's, then PMI's).
  virtual const EnvList& env(int rank) const = 0;
  // The socket to pass to rank `rank` as descriptor kPmiFdInChild, or -1. Owned by the
  // JobWire; close_child_fd() once the rank has been spawned (or never will be).
  virtual int child_fd(int rank) const = 0;
  virtual void close_child_fd(int rank) = 0;
  // Has every event the ranks have already caused delivered (PmiServer::sync): call
  // before judging a rank that exited without a finalize on record.
  virtual void sync() = 0;
  // What this job will not get that it may expect ("PMIx is unavailable: …").
  virtual const std::vector<std::string>& notices() const = 0;
};

class Wireup {
 public:
  // The process's wire-up, with the PMIx server's files under `tmp_root` ("" = /tmp).
  static Wireup& process(const std::string& tmp_root);
  virtual ~Wireup() = default;

  // Serves `map` as `mode` asks. kNone gives a JobWire with nothing in it. Fails when a
  // server the mode names cannot serve the job.
  virtual Result<std::unique_ptr<JobWire>> serve(const JobMap& map, Mode mode, EventSink sink) = 0;
  // A job id unique in this process: "berth.<pid>.<n>".
  virtual std::string next_id() = 0;
};

}  // namespace berth::wireup
