// PmixServer: berth as the PMIx server of the ranks it starts (spec 07 §2).
//
// An MPI library built on PMIx (Open MPI 4.1 through its ext3x component, MPICH built
// for PMIx, any PMIx tool) asks its launcher's PMIx server who it is and who its peers
// are, exchanges its business card with them at a fence, and reports MPI_Abort and
// MPI_Finalize to it. This is that server, embedded: one per berth process (libpmix
// allows one), started the first time a job asks for it and kept for every later job
// and step of the run, with libpmix's own progress thread.
//
// add_job() registers a JobMap as a namespace — the job-level and per-process
// information an MPI library asks for (sizes, local peers, node and process maps, ranks,
// app numbers, temporary directories; spec 07 §2.2) — registers every rank as a client
// and returns, per rank, the environment PMIx_server_setup_fork gives it, plus what
// Open MPI 4.1 needs to see that it was started by a runtime (spec 07 §2.3). Upcalls
// arrive on libpmix's thread: client connected / finalized and abort become RankEvents
// for the job's sink; a fence is answered with the local data (every participant is on
// this node); spawn, connect/disconnect, publish/lookup are refused with an error the
// rank sees at once and a kRefused event that names what was asked.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/env.h"
#include "util/result.h"
#include "wireup/job_map.h"

namespace berth::wireup {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct PmixJob {
  std::vector<EnvList> env;  // by rank: set in the rank's environment before its directives
};

class PmixServer {
 public:
  // The process's server, started on first use with its rendezvous files in a private
  // directory under `tmp_root` (a directory of dead berth processes there is removed).
  // Fails with libpmix's reason when it will not start; the failure is kept and
  // returned again without retrying.
  static Result<PmixServer*> instance(const std::string& tmp_root);

  // libpmix's hash datastore rather than its shared-memory ones (ds12, ds21): no
  // segment is made and mapped per namespace, which a job of one short task would pay
  // for, and nothing of libpmix's writes into memory it did not allocate with malloc
  // (the shared-memory stores' lock set-up trips AddressSanitizer). libpmix 4.2 takes
  // its choice of components only from the server process's environment, read when the
  // server starts: PMIx_server_init has no key for it (PMIX_GDS_MODULE only ranks the
  // components already opened). This is the variable and value that ask for it
  // (PMIX_MCA_gds=hash, spec 07 §2.1), for main to set for berth alone
  // (Env::set_for_berth_only) before any thread; nullopt where `env` (the process's)
  // already chooses: the user's choice stands.
  static std::optional<std::pair<std::string, std::string>> datastore_choice(const Env& env);

  virtual ~PmixServer() = default;

  // Registers the job and its ranks, and returns each rank's environment. `sink`
  // receives the ranks' events until remove_job returns. Fails when libpmix refuses
  // the namespace or a client (its status named) or the id is in use.
  virtual Result<PmixJob> add_job(const JobMap& map, EventSink sink) = 0;
  // Deregisters the job's clients and namespace; after it returns the sink is never
  // called again. Unknown ids are ignored.
  virtual void remove_job(const std::string& id) = 0;
  // The directory holding the server's rendezvous files.
  virtual const std::string& tmpdir() const = 0;
};

}  // namespace berth::wireup
