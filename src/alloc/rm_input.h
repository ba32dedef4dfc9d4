// rm_input: what the resource-manager sources (PBS, LSF, Grid Engine, Flux) share.
//
// Each of them reads a scheduler's variables and files, checks the host names it
// finds, and folds repeated hosts into one NodeSpec. Doing that once here keeps the
// rules identical across sources: the same name is accepted or refused whichever
// scheduler wrote it, and every count is bounded the same way.
//
// Messages returned by the checkers carry no origin; callers put the variable, flag or
// "file:line" in front, as parse_uint does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloc/node.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::alloc {

// The most slots one node may have, from one line or summed over repeats: 2^31-1, so
// that every later sum over a node's slots fits comfortably in int64_t.
inline constexpr int64_t kMaxNodeSlots = INT32_MAX;

// The longest host name accepted: DNS allows 253 characters in a name, plus slack.
inline constexpr size_t kMaxHostNameBytes = 255;

// Empty when `name` is a usable host name, else what is wrong with it
// ("'a\x01b' is not a host name: a control character at byte 2"). A name is 1 to
// kMaxHostNameBytes bytes of ASCII letters, digits, '-', '.', '_' and ':' (IPv6),
// starting with a letter, a digit or ':'. The first-character rule is not pedantry:
// names end up as launcher arguments, and a name starting with '-' would be read as an
// option by ssh or srun.
std::optional<std::string> host_name_problem(std::string_view name);

// Empty when `id` is a usable job id, else what is wrong. A job id is 1 to 256 bytes
// of well-formed UTF-8 with no whitespace or control characters. UTF-8 is allowed
// because Flux writes FLUX_JOB_ID in its F58 form, which starts with "ƒ" (U+0192).
std::optional<std::string> job_id_problem(std::string_view id);

// Slots per host, in the order hosts are first seen: every scheduler lists its first
// node first, and that order is the order ranks are laid out in.
class SlotTally {
 public:
  // Adds `slots` (>= 1) to `name`. Fails (message without origin) when the host's
  // total would pass kMaxNodeSlots. The name must already have been checked.
  Result<void> add(std::string_view name, int64_t slots);

  bool empty() const { return nodes_.empty(); }

  // The tallied nodes, each with slots_given = true: a scheduler's count is
  // authoritative (spec 01 §4: a source that forgets the flag hands the job its nodes'
  // core counts instead of its allocation).
  std::vector<NodeSpec> take() &&;

 private:
  std::vector<NodeSpec> nodes_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in nodes_
};

// Parses a file of one host name per line, each occurrence one slot (PBS_NODEFILE,
// LSB_DJOB_HOSTFILE). Blank lines, CR before LF and whitespace around a name are
// tolerated; a line with two names, a bad name or a file with no names is an error
// "<origin>:<line>: ...".
Result<std::vector<NodeSpec>> parse_host_per_line(std::string_view text, std::string_view origin);

// A variable that names or holds a scheduler's input: nullopt when unset, its value
// when set and non-empty. Set but empty is an error ("PBS_NODEFILE: is set but
// empty"): the scheduler's environment is present and wrong, which must stop discovery
// rather than let the next source guess.
Result<std::optional<std::string>> get_required_value(const Env& env, std::string_view name);

// A job-id variable: "" when unset, else its checked value; set but empty or not a job
// id is an error naming the variable.
Result<std::string> get_job_id(const Env& env, std::string_view name);

// How messages name a file that `what` (a variable or flag) named: "PBS_NODEFILE /x/y",
// with the path made printable.
std::string file_origin(std::string_view what, std::string_view path);

// Reads the file at `path` that `what` (a variable or flag) named. Errors read
// "<what> <path>: cannot open: No such file or directory", keeping read_file's code.
Result<std::string> read_named_file(std::string_view what, const std::string& path);

}  // namespace berth::alloc
