// Source: one way of learning what berth was given.
//
// Each resource manager (Slurm, PBS, LSF, Grid Engine, Flux), the hosts source
// (--host, --hostfile, the default hostfile) and the simulator is one Source. A
// source reads only its own inputs and answers one of three things:
//   - nullopt: "not mine" — its environment is absent; the next source is asked;
//   - a Found: the allocation, which this source now owns;
//   - an Error: its environment is present but wrong. Discovery stops there: a
//     half-read allocation is never replaced by a guess (spec 01 §1).
// discover.h asks them in priority order (spec 01 §1): simulator > PBS = Grid Engine =
// Flux > LSF > Slurm > hosts.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloc/node.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::alloc {

// Which Slurm figure becomes a node's slot count.
enum class SlurmSlots { kTasks, kCpus };

// What the user asked for on the command line, gathered by the CLI.
struct Options {
  std::vector<std::string> hosts;          // each --host value (a comma-separated list)
  std::optional<std::string> hostfile;     // --hostfile
  std::optional<std::string> default_hostfile;  // the default hostfile, if one exists
  std::optional<std::string> flux_r;       // --flux-r FILE
  std::optional<std::string> simulate;     // --simulate 3x4,2x8
  int64_t multiplier = 1;                  // --multiplier N
  SlurmSlots slurm_slots = SlurmSlots::kTasks;
  bool keep_fqdn = false;                  // --keep-fqdn: do not shorten FQDNs
};

// The host berth runs on.
struct LocalHost {
  std::string hostname;               // gethostname(), possibly an FQDN
  std::vector<std::string> aliases;   // other names: "localhost", its addresses
  int64_t usable_cores = 1;           // physical cores in berth's affinity, unless:
  // Counts them when asked, instead: reading the topology takes milliseconds, and only
  // the hosts source ever asks (a Slurm allocation of 10^5 nodes does not).
  std::function<int64_t()> count_cores;
  int64_t cores() const { return count_cores ? count_cores() : usable_cores; }
};

struct Input {
  const Env& env;
  const Options& options;
  const LocalHost& local;
};

// Where a source's nodes go, one at a time, in the source's order.
using NodeSink = std::function<void(const NodeSpec&)>;

struct Found {
  std::string job_id;                 // the scheduler's job id, or empty
  std::string job_step;               // inside a job step, its id (Allocation::job_step)
  // The nodes: each(add) hands every node to `add` once, in order, as often as it is
  // called. A source that parsed a list holds it (listed()); the Slurm source expands
  // its node list as the nodes are handed over, so that a job's 10^5 names go straight
  // into the node table and are never held as names and then as specs on the way.
  size_t count = 0;                   // how many nodes each() hands over
  std::function<void(const NodeSink& add)> each;

  static Found listed(std::vector<NodeSpec> nodes, std::string job_id = {});
  // Every node, collected.
  std::vector<NodeSpec> nodes() const;
};

using SourceResult = Result<std::optional<Found>>;

struct SourceInfo {
  const char* name;        // "slurm", "pbs", "lsf", "gridengine", "flux", "hosts", "simulator"
  int priority;            // higher is asked first
  bool scheduler_owned;    // an external resource manager owns what this source finds
  SourceResult (*discover)(const Input& in);
};

// The sources, one function each (source_*.cc).
SourceResult discover_slurm(const Input& in);
SourceResult discover_pbs(const Input& in);
SourceResult discover_lsf(const Input& in);
SourceResult discover_gridengine(const Input& in);
SourceResult discover_flux(const Input& in);
SourceResult discover_hosts(const Input& in);
SourceResult discover_simulator(const Input& in);

// ---- Pure parsers behind the sources: text in, specs out; fuzzed (tests/fuzz). ----
// Each error message starts with `origin` (a variable name or a path) and names the
// line or position that was wrong.

// PBS_NODEFILE: one host per line; repeats add a slot each; blank lines, CRLF and
// surrounding whitespace tolerated.
Result<std::vector<NodeSpec>> parse_pbs_nodefile(std::string_view text, std::string_view origin);
// LSB_DJOB_HOSTFILE: one host per line, every occurrence a slot.
Result<std::vector<NodeSpec>> parse_lsf_hostfile(std::string_view text, std::string_view origin);
// LSB_MCPU_HOSTS: "hostA 4 hostB 2"; a host named twice sums.
Result<std::vector<NodeSpec>> parse_lsf_mcpu_hosts(std::string_view text, std::string_view origin);
// PE_HOSTFILE: "host slots queue processor-range" per line, any whitespace; repeats sum.
Result<std::vector<NodeSpec>> parse_pe_hostfile(std::string_view text, std::string_view origin);
// Flux R version 1: {"version":1,"execution":{"R_lite":[...],"nodelist":[...]}}.
Result<std::vector<NodeSpec>> parse_flux_r(std::string_view text, std::string_view origin);
// A hostfile (spec 01 §5): `host [slots=N] [max_slots=M]`, `user@host`, `^host`,
// comments, hostlist expressions. Excluded names are returned in `excluded`.
struct Hostfile {
  std::vector<NodeSpec> nodes;
  std::vector<std::string> excluded;
};
Result<Hostfile> parse_hostfile(std::string_view text, std::string_view origin);
// One --host value: "a,b", "a:4", "a:*", "+n<i>", "+e", "+e:N".
struct HostToken {
  enum Kind { kName, kRelativeIndex, kEmpty } kind = kName;
  std::string name;        // kName
  int64_t slots = 1;       // kName with :N (or 1 per occurrence)
  bool slots_star = false; // kName with :* — slots from the node's cores
  bool slots_explicit = false;
  int64_t index = 0;       // kRelativeIndex: +n<index>
  int64_t count = -1;      // kEmpty: +e:N, or -1 for every empty node
};
Result<std::vector<HostToken>> parse_dash_host(std::string_view text, std::string_view origin);
// --simulate "3x4,2x8": 3 nodes of 4 slots then 2 of 8.
Result<std::vector<NodeSpec>> parse_simulate(std::string_view text, std::string_view origin);

}  // namespace berth::alloc
