// Job: many ranks of one or more apps on this node, started, supervised and ended
// as one (spec 03 §2, §5, §6).
//
// run_job() spawns every rank through a Spawner, each in its own process group with
// its environment built by the directives (job-wide, then its app's), told its rank
// (BERTH_RANK, BERTH_SIZE, BERTH_LOCAL_RANK, BERTH_APP, BERTH_CPUS) and bound to its
// CPUs. One thread then waits on everything at once — output pipes, berth's stdin,
// child exits and berth's own SIGINT/SIGTERM/SIGHUP through a signalfd, the timeout
// and the escalation deadline — so nothing can hang on one slow piece.
//
// Every job is also an MPI job unless told otherwise (spec 07): its ranks get the
// PMIx and PMI wire-up, and what they say on it is part of supervision — MPI_Abort
// ends the job with its code, and a rank that called MPI_Init and exits, even with
// status 0, without MPI_Finalize is a failure (its peers would wait for it for ever).
//
// Exit rules: 0 when every rank exits 0; otherwise the first failure decides — a
// rank's exit code as is, 128 + S for death by signal S, 127 for a rank that could
// not start, 124 for the timeout, 128 + S when berth itself got signal S, MPI_Abort's
// code (mod 256; 1 for a code that would read as success), 1 for an exit without
// MPI_Finalize. The first
// failure aborts the job unless keep_going: every live rank's group gets SIGCONT,
// SIGTERM, then SIGKILL after the grace period (escalation.h). A rank not yet
// started when the abort comes is never started. When the job ends, every rank's
// process group is sent SIGKILL so that nothing a rank spawned survives berth.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/directives.h"
#include "launch/escalation.h"
#include "launch/rank_gpus.h"
#include "launch/spawn.h"
#include "launch/status.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/result.h"
#include "wireup/wireup.h"

namespace berth::launch {

enum class BindTo { kCore, kHwthread, kNone };
enum class OutputMode { kPlain, kTag, kTagDetailed, kTimestamp, kXml };
enum class StdinMode { kRank0, kAll, kNone };

struct AppSpec {
  std::vector<std::string> argv;
  int ranks = 1;
  std::vector<EnvDirective> env;             // this app's directives, after the job's
  std::optional<std::vector<int>> cpu_set;   // --cpu-set: bind this app within these CPUs
  std::string cwd;                           // "" = berth's own
  // Paths its ranks may not write through (read_only.h): a pipeline step's inputs.
  std::vector<std::string> read_only;
  // Cores each rank is bound to (with a bind of core or hwthread): rank i takes the
  // i-th run of this many in its CPU pool.
  int cpus_per_rank = 1;
};

struct JobSpec {
  std::vector<AppSpec> apps;
  std::vector<EnvDirective> env;             // job-wide directives
  BindTo bind = BindTo::kCore;
  std::vector<int> usable_cores;             // one CPU id per physical core (topo)
  std::vector<int> hwthreads;                // every CPU id berth may use (for kHwthread)
  OutputMode output = OutputMode::kPlain;
  std::string output_dir;                    // per-rank files DIR/rank.N/{stdout,stderr}
  StdinMode stdin_mode = StdinMode::kRank0;
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds grace = kDefaultGrace;
  bool keep_going = false;                   // do not abort the job on the first failure
  // An app with more ranks than CPUs to bind them to runs unbound instead of being
  // refused (mpirun's --oversubscribe); the job says so once on stderr.
  bool oversubscribe = false;
  std::vector<std::string> exec_agent;       // words put before every rank's argv
  bool report_bindings = false;
  std::string job_id = "0";                  // for tags: [job,rank]
  std::string node;                          // this host's name, for tags and messages
  int stdin_fd = 0;                          // berth's stdin
  // Whether the job takes berth's SIGINT/SIGTERM/SIGHUP itself (a signalfd). An
  // embedding caller that runs several jobs at once (the pipeline executor) handles
  // them once and ends its jobs through `cancel_fd` instead: when that descriptor
  // becomes readable the job is aborted as if berth had been signalled.
  bool own_signals = true;
  int cancel_fd = -1;
  // MPI wire-up (spec 07): the job is a PMIx namespace and its ranks get PMI sockets,
  // so that MPI ranks find each other. `wireup` nullptr = the process's own servers.
  wireup::Mode mpi = wireup::Mode::kAuto;
  // Each rank its own GPUs (rank_gpus.h), set before the directives, which may
  // override them.
  RankGpus gpus;
  wireup::Wireup* wireup = nullptr;
  // Called on the supervising thread as each rank starts, with its job rank and pid,
  // which is its process group's id (a GPU check watches the group).
  std::function<void(int rank, pid_t pid)> on_started;
  // Whose time the timeout, the escalation, the drain and timestamped lines are on;
  // nullptr = the real clock. Must outlive the job.
  const Clock* clock = nullptr;
};

struct RankOutcome {
  int rank = 0;
  int app = 0;
  pid_t pid = -1;                 // -1: never started
  bool started = false;
  std::optional<ExitStatus> status;
  std::string failure;            // a spawn failure's message
};

struct JobOutcome {
  int exit_code = 0;
  // The job ran past JobSpec::timeout and was ended for it (exit_code 124): a rank's
  // own exit status 124 leaves this false.
  bool timed_out = false;
  std::vector<RankOutcome> ranks;
  // One line per failure worth reporting, the first failure first.
  std::vector<std::string> messages;
};

// Where forwarded output goes: the two streams of berth itself, or a test's buffers.
struct OutputSinks {
  std::function<void(std::string_view)> out;
  std::function<void(std::string_view)> err;
};

// Runs the job to its end. Fails before starting anything on a malformed job (no
// app, ranks < 1, more ranks than CPUs to bind them to, a directive that cannot
// apply, a descriptor limit too low), with a message naming what is wrong.
Result<JobOutcome> run_job(const JobSpec& spec, const Env& parent, Spawner& spawner,
                           const OutputSinks& sinks);

// The CPU ids each rank is bound to (by job rank); empty for no binding. `notices`
// names each app that oversubscribe left unbound. Fails when an app has more ranks
// than CPUs and the job does not allow oversubscription. Exposed for tests.
struct Bindings {
  std::vector<std::vector<int>> cpus;
  std::vector<std::string> notices;
};
Result<Bindings> compute_bindings(const JobSpec& spec);

// The prefix put before each forwarded line ("[job,rank]<stdout>: ", ...), and the
// XML form of a whole line. Exposed for tests.
std::string line_prefix(const JobSpec& spec, int rank, pid_t pid, bool is_stderr);
std::string xml_line(int rank, bool is_stderr, std::string_view line);

}  // namespace berth::launch
