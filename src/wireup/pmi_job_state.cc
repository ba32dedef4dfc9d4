// One job's PMI service (pmi_job_state.h, spec 07 §3.2). The answers' exact words are
// the ones MPICH's clients look for; where MPICH ignores a field, hydra's form is kept.
#include "wireup/pmi_job_state.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <string_view>

#include "util/strings.h"
#include "wireup/pmi_mapping.h"

namespace berth::wireup::pmi {
namespace {

// A PMI-1 value cannot hold a space: free text sent as one (a `msg=`) keeps letters,
// digits and ".-_" and turns the rest into '_', as hydra's messages read.
std::string word(std::string_view s) {
  std::string out(s.substr(0, 200));
  for (char& c : out) {
    if (!str::is_alnum(c) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out;
}

std::optional<long> to_long(std::string_view s) {
  long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string quoted(std::string_view s) { return "'" + str::printable(s, 64) + "'"; }

// Requests berth refuses: the command, what the rank asked for (for its user), what
// berth does not serve, and the answer's command.
struct Refusal {
  std::string_view cmd;
  std::string_view asked;
  std::string_view unserved;
  std::string_view reply;
};
constexpr Refusal kPmi1Refusals[] = {
    {"spawn", "to spawn processes (MPI_Comm_spawn)", "spawn", "spawn_result"},
    {"publish_name", "to publish a name (MPI_Publish_name)", "name publishing", "publish_result"},
    {"unpublish_name", "to unpublish a name (MPI_Unpublish_name)", "name publishing",
     "unpublish_result"},
    {"lookup_name", "to look up a name (MPI_Lookup_name)", "name publishing", "lookup_result"},
};
constexpr Refusal kPmi2Refusals[] = {
    {"spawn", "to spawn processes (MPI_Comm_spawn)", "spawn", "spawn-response"},
    {"name-publish", "to publish a name (MPI_Publish_name)", "name publishing",
     "name-publish-response"},
    {"name-unpublish", "to unpublish a name (MPI_Unpublish_name)", "name publishing",
     "name-unpublish-response"},
    {"name-lookup", "to look up a name (MPI_Lookup_name)", "name publishing",
     "name-lookup-response"},
    {"job-connect", "to connect to another job (MPI_Comm_connect)", "connecting jobs",
     "job-connect-response"},
    {"job-disconnect", "to disconnect from another job (MPI_Comm_disconnect)", "connecting jobs",
     "job-disconnect-response"},
};

}  // namespace

std::string kvsname_problem(const std::string& id) {
  if (id.empty()) return "the job id is empty";
  if (id.size() >= kKvsnameMax) {
    return fmt::format("the job id is {} bytes long; PMI allows {}", id.size(), kKvsnameMax - 1);
  }
  for (char c : id) {
    if (c <= ' ' || c > '~' || c == '=' || c == ';') {
      return fmt::format("the job id {} holds {}, which PMI cannot carry", quoted(id),
                         quoted(std::string_view(&c, 1)));
    }
  }
  return "";
}

// The message being answered: who sent it, how, and where its answers go.
struct JobState::Request {
  int rank;
  Wire wire;
  const Message& m;
  Effects& fx;
  std::optional<std::string> thrid;  // PMI-2: a threaded client's tag, echoed in every answer

  std::string_view arg(std::string_view key) const { return m.find(key).value_or(""); }
  void reply(std::string cmd, std::vector<Pair> args) {
    if (thrid) args.insert(args.begin(), Pair{"thrid", *thrid});
    fx.sends.push_back({rank, encode(wire, Message{std::move(cmd), std::move(args), false})});
  }
  void event(RankEvent::Kind kind, int code, std::string message) {
    fx.events.push_back(RankEvent{kind, rank, code, std::move(message)});
  }
};

JobState::JobState(JobMap map)
    : map_(std::move(map)),
      mapping_(process_mapping(map_)),
      ranks_(static_cast<size_t>(map_.size())),
      node_attrs_(map_.nodes.size()) {}

void JobState::on_message(int rank, Wire wire, const Message& m, Effects& fx) {
  Request q{rank, wire, m, fx, std::nullopt};
  if (wire == Wire::kPmi2) {
    if (auto t = m.find("thrid")) q.thrid = std::string(*t);
    pmi2(q);
  } else {
    pmi1(q);
  }
}

void JobState::on_garbage(int rank, const Error& e, Effects& fx) {
  fx.events.push_back(RankEvent{RankEvent::Kind::kRefused, rank, 0,
                                fmt::format("rank {} sent bytes that are not PMI ({}); berth "
                                            "closed its PMI connection",
                                            rank, e.message())});
  fx.close_sender = true;
}

std::optional<std::string> JobState::job_attribute(std::string_view key, size_t mapping_max) const {
  // A mapping too long for the client is not given: MPICH's PMI-1 code then learns the
  // layout by exchanging host names, which is right, only slower.
  if (key == "PMI_process_mapping" && mapping_.size() <= mapping_max) return mapping_;
  if (key == "universeSize") return std::to_string(map_.size());
  // No rank is known to have died while the job runs: berth ends the job instead.
  if (key == "PMI_dead_processes") return std::string();
  return std::nullopt;
}

bool JobState::put(std::string key, std::string value) {
  auto it = kvs_.find(key);
  size_t old = it == kvs_.end() ? 0 : it->first.size() + it->second.size();
  size_t now = key.size() + value.size();
  if (kvs_bytes_ - old + now > kKvsBytesMax) return false;
  kvs_bytes_ = kvs_bytes_ - old + now;
  kvs_[std::move(key)] = std::move(value);  // a key put again takes its latest value
  return true;
}

void JobState::refuse(Request& q, const std::string& event, const std::string& unserved,
                      const std::string& reply_cmd) {
  q.event(RankEvent::Kind::kRefused, 0, event);
  std::string why = "berth does not serve " + unserved;
  if (q.wire == Wire::kPmi1) {
    q.reply(reply_cmd, {{"rc", "-1"}, {"msg", word(why)}});
  } else {
    q.reply(reply_cmd, {{"rc", "-1"}, {"errmsg", why}});
  }
}

// The job's one barrier: PMI-1 barrier_in and PMI-2 kvs-fence alike. It completes when
// every rank has entered, and then every rank is answered in its own framing.
void JobState::enter_barrier(Request& q) {
  Rank& r = ranks_[static_cast<size_t>(q.rank)];
  if (r.in_barrier) {
    q.fx.events.push_back(RankEvent{
        RankEvent::Kind::kRefused, q.rank, 0,
        fmt::format("rank {} entered the PMI barrier again before it completed; berth closed "
                    "its PMI connection",
                    q.rank)});
    q.fx.close_sender = true;
    return;
  }
  r.in_barrier = true;
  r.barrier_wire = q.wire;
  r.barrier_thrid = q.thrid;
  if (++in_barrier_ < map_.size()) return;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& w = ranks_[i];
    Message out;
    if (w.barrier_wire == Wire::kPmi1) {
      out.cmd = "barrier_out";
    } else {
      out.cmd = "kvs-fence-response";
      if (w.barrier_thrid) out.args.push_back({"thrid", *w.barrier_thrid});
      out.args.push_back({"rc", "0"});
    }
    q.fx.sends.push_back({static_cast<int>(i), encode(w.barrier_wire, out)});
    w.in_barrier = false;
    w.barrier_thrid.reset();
  }
  in_barrier_ = 0;
}

// A rank's first init is its kInit; a second changes nothing.
void JobState::initialized(Request& q) {
  Rank& r = ranks_[static_cast<size_t>(q.rank)];
  if (!r.initialized) q.event(RankEvent::Kind::kInit, 0, "");
  r.initialized = true;
}

// A rank's first finalize is its kFinalize; a second changes nothing.
void JobState::finalized(Request& q) {
  Rank& r = ranks_[static_cast<size_t>(q.rank)];
  if (!r.finalized) q.event(RankEvent::Kind::kFinalize, 0, "");
  r.finalized = true;
}

// ---- PMI-1 ---------------------------------------------------------------------------

// PMI-1: `cmd=…` lines (and the init line every client starts with).
void JobState::pmi1(Request& q) {
  using Handler = void (JobState::*)(Request&);
  struct Command {
    std::string_view name;
    Handler handle;
  };
  static constexpr Command kCommands[] = {
      {"init", &JobState::pmi1_init},
      {"get_maxes", &JobState::pmi1_maxes},
      {"get_appnum", &JobState::pmi1_appnum},
      {"get_universe_size", &JobState::pmi1_universe_size},
      {"get_my_kvsname", &JobState::pmi1_kvsname},
      {"put", &JobState::pmi1_put},
      {"get", &JobState::pmi1_get},
      {"barrier_in", &JobState::enter_barrier},
      {"finalize", &JobState::pmi1_finalize},
      {"abort", &JobState::pmi1_abort},
  };

  for (const Command& c : kCommands) {
    if (q.m.cmd == c.name) return (this->*c.handle)(q);
  }
  for (const Refusal& r : kPmi1Refusals) {
    if (q.m.cmd != r.cmd) continue;
    std::string event =
        fmt::format("rank {} asked {}; berth does not serve {}", q.rank, r.asked, r.unserved);
    if (r.cmd == "spawn") return pmi1_spawn(q, event);
    return refuse(q, event, std::string(r.unserved), std::string(r.reply));
  }
  std::string name = word(q.m.cmd);
  refuse(q,
         fmt::format("rank {} sent the PMI-1 command {}, which berth does not serve", q.rank,
                     quoted(q.m.cmd)),
         name, name + "_result");
}

void JobState::pmi1_init(Request& q) {
  auto v = to_long(q.arg("pmi_version"));
  auto sub = to_long(q.arg("pmi_subversion"));
  // PMI-1.1 and 1.0 are one protocol; a PMI-2 client says 2.0 and goes on in PMI-2.
  if (v == 1 && sub && *sub <= 1) {
    q.reply("response_to_init", {{"pmi_version", "1"}, {"pmi_subversion", "1"}, {"rc", "0"}});
  } else if (v == 2 && sub == 0) {
    q.reply("response_to_init", {{"pmi_version", "2"}, {"pmi_subversion", "0"}, {"rc", "0"}});
  } else {
    // MPICH prints "pmi_version mismatch; client=… mgr=1.1" and aborts.
    q.reply("response_to_init", {{"pmi_version", "1"}, {"pmi_subversion", "1"}, {"rc", "-1"}});
    return;
  }
  initialized(q);
}

void JobState::pmi1_maxes(Request& q) {
  q.reply("maxes", {{"kvsname_max", std::to_string(kKvsnameMax)},
                    {"keylen_max", std::to_string(kKeyMax)},
                    {"vallen_max", std::to_string(kValueMax)}});
}

void JobState::pmi1_appnum(Request& q) {
  q.reply("appnum", {{"appnum", std::to_string(map_.procs[static_cast<size_t>(q.rank)].app)}});
}

void JobState::pmi1_universe_size(Request& q) {
  q.reply("universe_size", {{"size", std::to_string(map_.size())}});
}

void JobState::pmi1_kvsname(Request& q) { q.reply("my_kvsname", {{"kvsname", map_.id}}); }

void JobState::pmi1_put(Request& q) {
  auto failed = [&](std::string why) { q.reply("put_result", {{"rc", "-1"}, {"msg", word(why)}}); };
  auto key = q.m.find("key");
  if (q.arg("kvsname") != map_.id) return failed("kvsname is not this job's");
  if (!key || key->empty()) return failed("no key");
  if (key->size() > kKeyMax) return failed(fmt::format("key longer than {}", kKeyMax));
  if (q.arg("value").size() > kValueMax) {
    return failed(fmt::format("value longer than {}", kValueMax));
  }
  if (!put(std::string(*key), std::string(q.arg("value")))) {
    return failed("the job's key-value space is full");
  }
  q.reply("put_result", {{"rc", "0"}, {"msg", "success"}});
}

void JobState::pmi1_get(Request& q) {
  auto failed = [&](std::string why) {
    q.reply("get_result", {{"rc", "-1"}, {"msg", word(why)}, {"value", "unknown"}});
  };
  std::string key(q.arg("key"));
  if (q.arg("kvsname") != map_.id) return failed("kvsname is not this job's");
  std::optional<std::string> value = job_attribute(key, kMaxMappingPmi1);
  if (!value) {
    auto it = kvs_.find(key);
    if (it != kvs_.end()) value = it->second;
  }
  if (!value) return failed("key " + key + " not found");
  // The client's parser ends a value at a space, and reads one line of at most
  // kPmi1ReplyMax bytes: a value a PMI-2 rank put may not travel back.
  std::string reply =
      encode(Wire::kPmi1,
             Message{"get_result", {{"rc", "0"}, {"msg", "success"}, {"value", *value}}, false});
  if (value->find_first_of(" \n") != std::string::npos || reply.size() > kPmi1ReplyMax) {
    return failed("value of " + key + " cannot be sent over PMI-1");
  }
  q.fx.sends.push_back({q.rank, std::move(reply)});
}

void JobState::pmi1_finalize(Request& q) {
  q.reply("finalize_ack", {});
  finalized(q);
}

void JobState::pmi1_abort(Request& q) {
  // `cmd=abort exitcode=N`, no message (MPICH prints it itself), no answer: the rank
  // waits in MPI_Abort until berth ends the job. A missing code aborts with 1.
  long code = to_long(q.arg("exitcode")).value_or(1);
  if (code < INT_MIN || code > INT_MAX) code = 1;
  q.event(RankEvent::Kind::kAbort, static_cast<int>(code), "");
}

// MPI_Comm_spawn_multiple sends one mcmd block per command and reads one answer after
// the last (spawnssofar = totspawns): report once, answer once.
void JobState::pmi1_spawn(Request& q, const std::string& event) {
  Rank& rank = ranks_[static_cast<size_t>(q.rank)];
  auto total = to_long(q.arg("totspawns"));
  auto sofar = to_long(q.arg("spawnssofar"));
  bool last = !total || !sofar || *sofar >= *total;
  if (!rank.spawn_reported) q.event(RankEvent::Kind::kRefused, 0, event);
  rank.spawn_reported = !last;
  if (last) q.reply("spawn_result", {{"rc", "-1"}, {"msg", word("berth does not serve spawn")}});
}

// ---- PMI-2 ---------------------------------------------------------------------------

// PMI-2: length-prefixed `cmd=…;` messages, after the PMI-1 init line.
void JobState::pmi2(Request& q) {
  using Handler = void (JobState::*)(Request&);
  struct Command {
    std::string_view name;
    Handler handle;
  };
  static constexpr Command kCommands[] = {
      {"fullinit", &JobState::pmi2_fullinit},
      {"job-getid", &JobState::pmi2_job_getid},
      {"info-getjobattr", &JobState::pmi2_getjobattr},
      {"info-putnodeattr", &JobState::pmi2_putnodeattr},
      {"info-getnodeattr", &JobState::pmi2_getnodeattr},
      {"kvs-put", &JobState::pmi2_kvs_put},
      {"kvs-get", &JobState::pmi2_kvs_get},
      {"kvs-fence", &JobState::enter_barrier},
      {"finalize", &JobState::pmi2_finalize},
      {"abort", &JobState::pmi2_abort},
  };

  for (const Command& c : kCommands) {
    if (q.m.cmd == c.name) return (this->*c.handle)(q);
  }
  for (const Refusal& r : kPmi2Refusals) {
    if (q.m.cmd == r.cmd) {
      return refuse(
          q, fmt::format("rank {} asked {}; berth does not serve {}", q.rank, r.asked, r.unserved),
          std::string(r.unserved), std::string(r.reply));
    }
  }
  refuse(q,
         fmt::format("rank {} sent the PMI-2 command {}, which berth does not serve", q.rank,
                     quoted(q.m.cmd)),
         str::printable(q.m.cmd, 64), word(q.m.cmd) + "-response");
}

void JobState::pmi2_fullinit(Request& q) {
  auto claimed = q.m.find("pmirank");
  if (claimed && to_long(*claimed) != q.rank) {
    q.reply("fullinit-response",
            {{"rc", "-1"},
             {"errmsg", fmt::format("pmirank {} is not the rank of this PMI socket ({})",
                                    str::printable(*claimed, 16), q.rank)}});
    return;
  }
  q.reply("fullinit-response",
          {{"pmi-version", "2"},
           {"pmi-subversion", "0"},
           {"rank", std::to_string(q.rank)},
           {"size", std::to_string(map_.size())},
           {"appnum", std::to_string(map_.procs[static_cast<size_t>(q.rank)].app)},
           {"debugged", "FALSE"},
           {"pmiverbose", "FALSE"},
           {"rc", "0"}});
  initialized(q);
}

void JobState::pmi2_job_getid(Request& q) {
  q.reply("job-getid-response", {{"jobid", map_.id}, {"rc", "0"}});
}

void JobState::pmi2_getjobattr(Request& q) {
  auto value = job_attribute(q.arg("key"), kMaxMappingPmi2);
  if (value) {
    q.reply("info-getjobattr-response", {{"found", "TRUE"}, {"value", *value}, {"rc", "0"}});
  } else {
    q.reply("info-getjobattr-response", {{"found", "FALSE"}, {"rc", "0"}});
  }
}

void JobState::pmi2_putnodeattr(Request& q) {
  std::string key(q.arg("key"));
  if (key.empty() || key.size() > kKeyMax || q.arg("value").size() > kValueMax) {
    q.reply("info-putnodeattr-response",
            {{"rc", "-1"}, {"errmsg", "key empty or longer than 64, or value longer than 1024"}});
    return;
  }
  int node = map_.procs[static_cast<size_t>(q.rank)].node;
  auto& attrs = node_attrs_[static_cast<size_t>(node)];
  attrs[key] = std::string(q.arg("value"));
  q.reply("info-putnodeattr-response", {{"rc", "0"}});
  // Ranks of this node waiting for the key get it now.
  std::erase_if(node_waits_, [&](const NodeWait& w) {
    if (w.key != key || map_.procs[static_cast<size_t>(w.rank)].node != node) return false;
    Message out{"info-getnodeattr-response", {}, false};
    if (w.thrid) out.args.push_back({"thrid", *w.thrid});
    out.args.insert(out.args.end(), {{"found", "TRUE"}, {"value", attrs[key]}, {"rc", "0"}});
    q.fx.sends.push_back({w.rank, encode(Wire::kPmi2, out)});
    return true;
  });
}

void JobState::pmi2_getnodeattr(Request& q) {
  std::string key(q.arg("key"));
  const auto& attrs =
      node_attrs_[static_cast<size_t>(map_.procs[static_cast<size_t>(q.rank)].node)];
  auto it = attrs.find(key);
  if (it != attrs.end()) {
    q.reply("info-getnodeattr-response", {{"found", "TRUE"}, {"value", it->second}, {"rc", "0"}});
  } else if (q.arg("wait") == "TRUE") {
    // Answered when a rank of this node puts the key (MPICH waits so for the values
    // its node-local broadcast puts).
    node_waits_.push_back(NodeWait{q.rank, key, q.thrid});
  } else {
    q.reply("info-getnodeattr-response", {{"found", "FALSE"}, {"rc", "0"}});
  }
}

void JobState::pmi2_kvs_put(Request& q) {
  auto key = q.m.find("key");
  std::string why;
  if (!key || key->empty()) {
    why = "no key";
  } else if (key->size() > kKeyMax) {
    why = fmt::format("key longer than {}", kKeyMax);
  } else if (q.arg("value").size() > kValueMax) {
    why = fmt::format("value longer than {}", kValueMax);
  } else if (!put(std::string(*key), std::string(q.arg("value")))) {
    why = "the job's key-value space is full";
  }
  if (why.empty()) {
    q.reply("kvs-put-response", {{"rc", "0"}});
  } else {
    q.reply("kvs-put-response", {{"rc", "-1"}, {"errmsg", why}});
  }
}

void JobState::pmi2_kvs_get(Request& q) {
  auto jobid = q.m.find("jobid");
  if (jobid && !jobid->empty() && *jobid != map_.id) {
    q.reply("kvs-get-response",
            {{"rc", "-1"}, {"errmsg", "jobid " + str::printable(*jobid) + " is not this job's"}});
    return;
  }
  std::string key(q.arg("key"));
  std::optional<std::string> value;
  if (key == "PMI_dead_processes") value = job_attribute(key, kMaxMappingPmi2);
  auto it = kvs_.find(key);
  if (!value && it != kvs_.end()) value = it->second;
  if (value) {
    q.reply("kvs-get-response", {{"found", "TRUE"}, {"value", *value}, {"rc", "0"}});
  } else {
    q.reply("kvs-get-response", {{"found", "FALSE"}, {"rc", "0"}});
  }
}

void JobState::pmi2_finalize(Request& q) {
  q.reply("finalize-response", {{"rc", "0"}});
  finalized(q);
}

void JobState::pmi2_abort(Request& q) {
  // PMI2_Abort carries a message and no exit code, and its client exits at once by
  // itself: report 1, answer nothing.
  q.event(RankEvent::Kind::kAbort, 1, std::string(q.arg("msg")));
}

}  // namespace berth::wireup::pmi
