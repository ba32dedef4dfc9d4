// JobMap: one job as the wire-up servers describe it to its ranks (spec 07 §1).
//
// A job is a namespace of ranks 0..size-1, split into apps (MPMD: `-n 2 ./a : -n 2 ./b`
// is one job of two apps) and laid out on nodes. The PMIx and PMI servers answer an MPI
// library's questions — how many ranks, which are on my node, which app am I, where is
// rank r — from this map alone, so that both servers give the same answers.
//
// RankEvent is what the servers tell the job's supervisor about its ranks: that one
// connected (MPI_Init), finalized (MPI_Finalize), asked to abort (MPI_Abort) or asked
// for something berth does not serve (MPI_Comm_spawn). Events are delivered on the
// server's own thread through an EventSink, which must not block.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace berth::wireup {

struct JobMap {
  std::string id;                  // the namespace (PMIx) and kvsname (PMI): unique per process
  std::vector<std::string> nodes;  // node names, by node index
  struct Proc {
    int app = 0;         // app number (MPI_APPNUM)
    int node = 0;        // index into nodes
    int local_rank = 0;  // rank among the job's ranks on its node
    int node_rank = 0;   // rank among all of berth's ranks on its node (= local_rank here)
  };
  std::vector<Proc> procs;  // by global rank
  std::string tmpdir;       // a directory the job's ranks may use (PMIX_TMPDIR…), "" = none
  // More ranks on this node than cores for them: the ranks should yield the CPU while
  // they wait rather than spin (spec 07 §2.3).
  bool oversubscribed = false;
  // This node's hwloc topology as XML, handed to the ranks so that each need not
  // discover it (spec 07 §2.2); "" = none.
  std::string topology_xml;

  int size() const { return static_cast<int>(procs.size()); }
  int apps() const;
  // Ranks of app `a`, and the first rank of app `a`.
  int app_size(int a) const;
  int app_first_rank(int a) const;
  // Global ranks on node `n`, ascending.
  std::vector<int> ranks_on(int n) const;

  // One node, ranks in order, apps of the given sizes: what `berth launch` and a
  // pipeline step on this node run.
  static JobMap local(std::string id, std::string node, const std::vector<int>& app_sizes);
};

struct RankEvent {
  enum class Kind {
    kInit,      // the rank connected to a server (PMIx client init, PMI init)
    kFinalize,  // the rank finalized: it may now exit without failing the job
    kAbort,     // the rank asked to abort the job with `code` (MPI_Abort)
    kRefused,   // the rank asked for what berth does not serve; `message` says what
  };
  Kind kind = Kind::kInit;
  int rank = 0;
  int code = 0;
  std::string message;  // the rank's abort message, or what was refused
};

using EventSink = std::function<void(const RankEvent&)>;

}  // namespace berth::wireup
