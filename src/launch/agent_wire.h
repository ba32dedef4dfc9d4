// The agent's wire: what a run and the berth agents it started on other nodes say to
// each other over the launcher's own pipes (spec 08 §3).
//
// The run writes requests to the launcher's stdin, one JSON object a line, each naming
// the agent it is for ("to"): under srun one stdin reaches every agent of the step
// (--input=all), and each agent keeps the lines for itself. A stdin is one writer's
// byte stream, so its lines arrive whole however long.
//
// Agents answer on the launcher's stdout, which under srun is every agent's output
// merged. srun forwards a task's line whole only up to about 1 KiB — a longer line is
// cut, and its pieces interleave with other tasks' lines (measured on Slurm 22.05) — so
// every message an agent writes is framed into lines of at most kMaxLine bytes, each
// tagged with the agent's node:
//     @berth1 <node> + <part>      a part, more to come
//     @berth1 <node> . <part>      the last part: the message is whole
// One agent's lines keep their order, so a node's parts join in the order they came.
// A line without the tag is not the agent's (a launcher's warning, a login script's
// echo): it is kept as text, never parsed.
//
// Output bytes travel in base64 (a step may print anything); everything else is JSON.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/job.h"
#include "util/result.h"

namespace berth::launch::agent {

inline constexpr size_t kMaxLine = 960;  // bytes, the newline included
inline constexpr std::string_view kTag = "@berth1 ";
// What one node's unfinished message may grow to before it is refused.
inline constexpr size_t kMaxMessage = size_t{64} << 20;

// `message` (one line of JSON, no newline) as framed lines, each ending in '\n'.
// `node` must be a word: no space, no control character.
std::vector<std::string> frame(std::string_view node, std::string_view message);

// Joins framed lines back into messages, per node.
class Unframer {
 public:
  struct Message {
    std::string node;
    std::string text;
  };
  struct Fed {
    std::optional<Message> message;  // a whole message, when this line ended one
    std::string foreign;             // the line, when it was not an agent's
    std::string problem;             // a tagged line that does not parse, or too long a message
  };
  // One line, without its newline.
  Fed feed(std::string_view line);

 private:
  std::map<std::string, std::string> partial_;
};

// Bytes as base64 and back; decoding fails on text that is not base64.
std::string to_base64(std::string_view bytes);
Result<std::string> from_base64(std::string_view text);

// What runs on an agent: the parts of a JobSpec a run hands over (the apps, the
// directives, binding, GPUs, wire-up, timeout), and back. Local things — descriptors,
// callbacks, the clock, the wire-up servers — stay with the side that owns them.
nlohmann::json job_to_json(const JobSpec& job);
Result<JobSpec> job_from_json(const nlohmann::json& j);

// What became of a job: its exit code, whether it timed out, its messages, its ranks.
nlohmann::json outcome_to_json(const JobOutcome& o);
Result<JobOutcome> outcome_from_json(const nlohmann::json& j);

// A JSON object from one line; fails naming `what` and the parser's position.
Result<nlohmann::json> parse_message(std::string_view text, std::string_view what);

}  // namespace berth::launch::agent
