// Launch failures: the fixed-size record a child sends up its error pipe, and the
// messages the parent renders from it (spec 03 §4).
//
// The child between fork and exec may not allocate, lock or print, so it reports a
// stage and an errno — nothing else — through a close-on-exec pipe; EOF with no
// record means exec succeeded. The parent, which may do anything, turns the record
// into a message naming the rank, the executable or directory, and the node.
#pragma once

#include <cstdint>
#include <string>

namespace berth::launch {

// Where in the spawn sequence the child failed.
enum class SpawnStage : int32_t {
  kNone = 0,
  kGate,        // reading the fork gate
  kSetsid,      // setpgid / setsid
  kStdio,       // dup2 of stdin/stdout/stderr
  kSignals,     // resetting signal dispositions and the mask
  kAffinity,    // sched_setaffinity: binding refused
  kMemPolicy,   // set_mempolicy (a refused default policy is never reported)
  kLimits,      // setrlimit
  kChdir,       // the working directory
  kExec,        // execve
  kReadOnly,    // unshare / mount: making the read-only paths so (read_only.h)
};

// The record: exactly this, written with one write(2) of sizeof(SpawnFailure) bytes.
struct SpawnFailure {
  SpawnStage stage = SpawnStage::kNone;
  int32_t err = 0;  // errno at the failing call
};
static_assert(sizeof(SpawnFailure) == 8, "the error record is fixed-size");

// What the parent knows when rendering.
struct FailureContext {
  // < 0: no rank of a job but a command berth runs for itself (capture.h), whose
  // messages name neither a rank nor a node.
  int rank = 0;
  std::string executable;  // as given (argv[0])
  std::string resolved;    // the path searched out on the child's PATH, if any
  std::string cwd;         // the working directory asked for
  std::string node;        // this host's name
  std::string cpus;        // the binding asked for ("0-3")
};

// One line: "rank 2 on node1: executable 'foo' not found on the child's PATH
// (/usr/bin:/bin)", "... '/tmp/x' is a directory", "... is not executable",
// "... bad interpreter ('#!/nope' in /tmp/s)", "... working directory '/gone' does
// not exist", "... binding to cores 8-9 refused: Invalid argument".
// `path_env` is the child's PATH, for the not-found message.
std::string render_failure(const SpawnFailure& f, const FailureContext& c,
                           const std::string& path_env);

}  // namespace berth::launch
