// pmi::JobState: one job's PMI service without the sockets — its key-value space, its
// barrier, its node attributes, each rank's state, and the answer to every message a
// rank sends (spec 07 §3.2). The server (pmi_server.cc) decodes bytes into messages,
// hands them here, and sends what comes back; tests drive it directly.
//
// A message is answered in the framing it came in (a PMI-2 client's PMI-1 init line gets
// a PMI-1 answer). PMI-1 and PMI-2 ranks of one job share the key-value space and the
// barrier (PMI-1 barrier_in, PMI-2 kvs-fence). Requests berth does not serve (spawn,
// name publishing, connecting to other jobs, commands it does not know) are answered
// with a failure and reported as kRefused; abort is reported and never answered, so the
// rank waits in MPI_Abort until the job is ended.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/result.h"
#include "wireup/job_map.h"
#include "wireup/pmi_wire.h"

namespace berth::wireup::pmi {

// The maxima announced to PMI-1 clients (`cmd=maxes`), as hydra and Slurm announce
// them; PMI-2's are fixed by its API (PMI2_MAX_KEYLEN, PMI2_MAX_VALLEN).
inline constexpr size_t kKvsnameMax = 256;
inline constexpr size_t kKeyMax = 64;
inline constexpr size_t kValueMax = 1024;
// The longest line MPICH's PMI-1 client reads back, newline included (1024 - its NUL).
inline constexpr size_t kPmi1ReplyMax = 1023;
// What one job's key-value space may hold before puts are refused.
inline constexpr size_t kKvsBytesMax = 64 * 1024 * 1024;

// What handling one message asks of the server.
struct Effects {
  struct Send {
    int rank = 0;
    std::string bytes;  // encoded, ready to write
  };
  std::vector<Send> sends;
  std::vector<RankEvent> events;
  bool close_sender = false;  // end the sender's connection after the sends
};

// Whether `id` can be a kvsname: 1-255 printable ASCII characters, none of them a space,
// '=' or ';' (they would split a PMI-1 word or a PMI-2 pair). Empty = fine, else why not.
std::string kvsname_problem(const std::string& id);

class JobState {
 public:
  // `map` must be valid: ranks, nodes in range, an id kvsname_problem() accepts.
  explicit JobState(JobMap map);

  const JobMap& map() const { return map_; }

  // One decoded message from `rank`, which came framed as `wire`.
  void on_message(int rank, Wire wire, const Message& m, Effects& fx);
  // Bytes from `rank` that are not a PMI message: reported as kRefused naming `e`, and
  // the connection is ended (the stream cannot be resynchronised).
  void on_garbage(int rank, const Error& e, Effects& fx);

 private:
  struct Rank {
    bool initialized = false;
    bool finalized = false;
    bool in_barrier = false;
    Wire barrier_wire = Wire::kPmi1;
    std::optional<std::string> barrier_thrid;
    bool spawn_reported = false;  // this spawn sequence (mcmd totspawns) was reported
  };
  struct NodeWait {
    int rank = 0;
    std::string key;
    std::optional<std::string> thrid;
  };
  struct Request;  // the message being answered, with what its answers need

  // Each protocol's dispatch through its command table, then one function per command.
  void pmi1(Request& q);
  void pmi1_init(Request& q);
  void pmi1_maxes(Request& q);
  void pmi1_appnum(Request& q);
  void pmi1_universe_size(Request& q);
  void pmi1_kvsname(Request& q);
  void pmi1_put(Request& q);
  void pmi1_get(Request& q);
  void pmi1_finalize(Request& q);
  void pmi1_abort(Request& q);
  void pmi1_spawn(Request& q, const std::string& event);
  void pmi2(Request& q);
  void pmi2_fullinit(Request& q);
  void pmi2_job_getid(Request& q);
  void pmi2_getjobattr(Request& q);
  void pmi2_putnodeattr(Request& q);
  void pmi2_getnodeattr(Request& q);
  void pmi2_kvs_put(Request& q);
  void pmi2_kvs_get(Request& q);
  void pmi2_finalize(Request& q);
  void pmi2_abort(Request& q);

  // What both protocols share.
  void enter_barrier(Request& q);
  void initialized(Request& q);
  void finalized(Request& q);
  void refuse(Request& q, const std::string& event, const std::string& unserved,
              const std::string& reply_cmd);
  std::optional<std::string> job_attribute(std::string_view key, size_t mapping_max) const;
  bool put(std::string key, std::string value);

  JobMap map_;
  std::string mapping_;
  std::vector<Rank> ranks_;
  int in_barrier_ = 0;
  std::unordered_map<std::string, std::string> kvs_;
  size_t kvs_bytes_ = 0;
  std::vector<std::map<std::string, std::string>> node_attrs_;  // by node index
  std::vector<NodeWait> node_waits_;
};

}  // namespace berth::wireup::pmi
