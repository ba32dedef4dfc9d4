// The agent's wire (agent_wire.h).
#include "launch/agent_wire.h"

#include <fmt/format.h>

#include "util/libcrypto.h"
#include "util/strings.h"

namespace berth::launch::agent {
namespace {

using json = nlohmann::json;

bool is_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  return true;
}

// Typed reads of one field; each fails naming the field.
Result<std::string> text_of(const json& j, const char* key, bool required = true) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (!required) return std::string();
    return fail(Errc::kInvalidInput, fmt::format("'{}' is missing", key));
  }
  if (!it->is_string()) return fail(Errc::kInvalidInput, fmt::format("'{}' is not a string", key));
  return it->get<std::string>();
}

Result<int64_t> number_of(const json& j, const char* key, int64_t otherwise, int64_t lo,
                          int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return otherwise;
  if (!it->is_number_integer()) {
    return fail(Errc::kInvalidInput, fmt::format("'{}' is not a whole number", key));
  }
  auto v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return fail(Errc::kInvalidInput, fmt::format("'{}' is {}: out of range", key, v));
  }
  return v;
}

Result<bool> flag_of(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (!it->is_boolean()) return fail(Errc::kInvalidInput, fmt::format("'{}' is not a boolean", key));
  return it->get<bool>();
}

Result<std::vector<std::string>> texts_of(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) return fail(Errc::kInvalidInput, fmt::format("'{}' is not a list", key));
  for (const auto& v : *it) {
    if (!v.is_string()) {
      return fail(Errc::kInvalidInput, fmt::format("'{}' holds a non-string", key));
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::vector<int>> ints_of(const json& v, const char* key) {
  std::vector<int> out;
  if (!v.is_array()) return fail(Errc::kInvalidInput, fmt::format("'{}' is not a list", key));
  for (const auto& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > (1 << 24)) {
      return fail(Errc::kInvalidInput, fmt::format("'{}' holds something not a CPU id", key));
    }
    out.push_back(x.get<int>());
  }
  return out;
}

json directives_to_json(const std::vector<EnvDirective>& ds) {
  json out = json::array();
  for (const auto& d : ds) {
    out.push_back({static_cast<int>(d.kind), d.name, d.value, d.separator, d.prefix});
  }
  return out;
}

Result<std::vector<EnvDirective>> directives_from_json(const json& j, const char* key) {
  std::vector<EnvDirective> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) return fail(Errc::kInvalidInput, fmt::format("'{}' is not a list", key));
  for (const auto& d : *it) {
    if (!d.is_array() || d.size() != 5 || !d[0].is_number_integer() || !d[1].is_string() ||
        !d[2].is_string() || !d[3].is_string() || !d[4].is_boolean()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("'{}' holds something not [kind, name, value, separator, prefix]", key));
    }
    int kind = d[0].get<int>();
    if (kind < EnvDirective::kSet || kind > EnvDirective::kExport) {
      return fail(Errc::kInvalidInput, fmt::format("'{}': no directive of kind {}", key, kind));
    }
    out.push_back({static_cast<EnvDirective::Kind>(kind), d[1].get<std::string>(),
                   d[2].get<std::string>(), d[3].get<std::string>(), d[4].get<bool>()});
  }
  return out;
}

const char* bind_name(BindTo b) {
  return b == BindTo::kCore ? "core" : b == BindTo::kHwthread ? "hwthread" : "none";
}

Result<AppSpec> app_from_json(const json& a) {
  if (!a.is_object()) return fail(Errc::kInvalidInput, "an app is not an object");
  AppSpec app;
  BERTH_TRY(app.argv, texts_of(a, "argv"));
  if (app.argv.empty()) return fail(Errc::kInvalidInput, "an app has no argv");
  BERTH_TRY(int64_t ranks, number_of(a, "ranks", 1, 1, 1 << 20));
  app.ranks = static_cast<int>(ranks);
  BERTH_TRY(app.env, directives_from_json(a, "env"));
  if (auto it = a.find("cpu_set"); it != a.end() && !it->is_null()) {
    BERTH_TRY(std::vector<int> set, ints_of(*it, "cpu_set"));
    app.cpu_set = std::move(set);
  }
  BERTH_TRY(app.cwd, text_of(a, "cwd", false));
  BERTH_TRY(app.read_only, texts_of(a, "read_only"));
  BERTH_TRY(int64_t per_rank, number_of(a, "cpus_per_rank", 1, 1, 1 << 20));
  app.cpus_per_rank = static_cast<int>(per_rank);
  return app;
}

Result<RankGpus> gpus_from_json(const json& j) {
  RankGpus g;
  auto it = j.find("gpus");
  if (it == j.end()) return g;
  if (!it->is_object()) return fail(Errc::kInvalidInput, "'gpus' is not an object");
  BERTH_TRY(int64_t per_rank, number_of(*it, "per_rank", 0, 0, 1 << 16));
  g.per_rank = static_cast<int>(per_rank);
  BERTH_TRY(g.variable, text_of(*it, "variable", false));
  BERTH_TRY(g.ids, texts_of(*it, "ids"));
  if (auto lc = it->find("local_cores"); lc != it->end()) {
    if (!lc->is_array()) return fail(Errc::kInvalidInput, "'local_cores' is not a list");
    for (const auto& cores : *lc) {
      BERTH_TRY(std::vector<int> ids, ints_of(cores, "local_cores"));
      g.local_cores.push_back(std::move(ids));
    }
  }
  return g;
}

}  // namespace

std::vector<std::string> frame(std::string_view node, std::string_view message) {
  std::vector<std::string> lines;
  // "@berth1 " + node + " + " + part + "\n"
  const size_t overhead = kTag.size() + node.size() + 4;
  const size_t room = kMaxLine > overhead + 16 ? kMaxLine - overhead : 16;
  size_t at = 0;
  do {
    size_t n = std::min(room, message.size() - at);
    bool last = at + n == message.size();
    std::string line;
    line.reserve(overhead + n);
    line.append(kTag).append(node).append(last ? " . " : " + ");
    line.append(message.substr(at, n)).push_back('\n');
    lines.push_back(std::move(line));
    at += n;
  } while (at < message.size());
  return lines;
}

Unframer::Fed Unframer::feed(std::string_view line) {
  Fed fed;
  if (!line.starts_with(kTag)) {
    fed.foreign = std::string(line);
    return fed;
  }
  std::string_view rest = line.substr(kTag.size());
  size_t sp = rest.find(' ');
  if (sp == std::string_view::npos || rest.size() < sp + 3 || rest[sp + 2] != ' ' ||
      (rest[sp + 1] != '+' && rest[sp + 1] != '.') || !is_word(rest.substr(0, sp))) {
    fed.problem = "a line of the agents' wire that does not parse: " +
                  str::printable(line.substr(0, 80));
    return fed;
  }
  std::string node(rest.substr(0, sp));
  std::string& part = partial_[node];
  std::string_view text = rest.substr(sp + 3);
  if (part.size() + text.size() > kMaxMessage) {
    partial_.erase(node);
    fed.problem = fmt::format("the agent on '{}' sent a message over {} bytes", node, kMaxMessage);
    return fed;
  }
  part.append(text);
  if (rest[sp + 1] == '.') {
    fed.message = Message{node, std::move(part)};
    partial_.erase(node);
  }
  return fed;
}

std::string to_base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = libcrypto().EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(0, n)));
  return out;
}

Result<std::string> from_base64(std::string_view text) {
  if (text.size() % 4 != 0) return fail(Errc::kInvalidInput, "base64 of a length not a multiple of 4");
  std::string out(text.size() / 4 * 3 + 1, '\0');
  int n = text.empty() ? 0
                       : libcrypto().EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                                     reinterpret_cast<const unsigned char*>(text.data()),
                                                     static_cast<int>(text.size()));
  if (n < 0) return fail(Errc::kInvalidInput, "text that is not base64");
  // The decoder counts the padding as bytes: each '=' at the end is one too many.
  size_t pad = 0;
  for (size_t k = text.size(); k > 0 && pad < 2 && text[k - 1] == '='; --k) ++pad;
  out.resize(static_cast<size_t>(n) - std::min(pad, static_cast<size_t>(n)));
  return out;
}

json job_to_json(const JobSpec& job) {
  json apps = json::array();
  for (const auto& a : job.apps) {
    json app = {{"argv", a.argv},         {"ranks", a.ranks}, {"env", directives_to_json(a.env)},
                {"cwd", a.cwd},           {"read_only", a.read_only},
                {"cpus_per_rank", a.cpus_per_rank}};
    app["cpu_set"] = a.cpu_set ? json(*a.cpu_set) : json(nullptr);
    apps.push_back(std::move(app));
  }
  json j = {{"apps", std::move(apps)},
            {"env", directives_to_json(job.env)},
            {"bind", bind_name(job.bind)},
            {"usable_cores", job.usable_cores},
            {"hwthreads", job.hwthreads},
            {"grace_ms", job.grace.count()},
            {"keep_going", job.keep_going},
            {"oversubscribe", job.oversubscribe},
            {"job_id", job.job_id},
            {"node", job.node},
            {"mpi", wireup::mode_name(job.mpi)},
            {"gpus",
             {{"per_rank", job.gpus.per_rank},
              {"variable", job.gpus.variable},
              {"ids", job.gpus.ids},
              {"local_cores", job.gpus.local_cores}}}};
  j["timeout_ms"] = job.timeout ? json(job.timeout->count()) : json(nullptr);
  return j;
}

Result<JobSpec> job_from_json(const json& j) {
  if (!j.is_object()) return fail(Errc::kInvalidInput, "a job is not an object");
  JobSpec job;
  auto apps = j.find("apps");
  if (apps == j.end() || !apps->is_array() || apps->empty()) {
    return fail(Errc::kInvalidInput, "a job has no apps");
  }
  for (const auto& a : *apps) {
    BERTH_TRY(AppSpec app, app_from_json(a));
    job.apps.push_back(std::move(app));
  }
  BERTH_TRY(job.env, directives_from_json(j, "env"));
  BERTH_TRY(std::string bind, text_of(j, "bind", false));
  if (bind == "core") job.bind = BindTo::kCore;
  else if (bind == "hwthread") job.bind = BindTo::kHwthread;
  else if (bind == "none" || bind.empty()) job.bind = BindTo::kNone;
  else return fail(Errc::kInvalidInput, "'bind' is '" + str::printable(bind) + "'");
  for (auto [key, into] : {std::pair{"usable_cores", &job.usable_cores},
                           std::pair{"hwthreads", &job.hwthreads}}) {
    if (auto it = j.find(key); it != j.end()) {
      BERTH_TRY(*into, ints_of(*it, key));
    }
  }
  BERTH_TRY(int64_t grace, number_of(j, "grace_ms", kDefaultGrace.count(), 0, 3600 * 1000));
  job.grace = std::chrono::milliseconds(grace);
  BERTH_TRY(int64_t timeout, number_of(j, "timeout_ms", -1, -1, int64_t{1} << 40));
  if (timeout >= 0) job.timeout = std::chrono::milliseconds(timeout);
  BERTH_TRY(job.keep_going, flag_of(j, "keep_going"));
  BERTH_TRY(job.oversubscribe, flag_of(j, "oversubscribe"));
  BERTH_TRY(job.job_id, text_of(j, "job_id", false));
  BERTH_TRY(job.node, text_of(j, "node", false));
  BERTH_TRY(std::string mpi, text_of(j, "mpi", false));
  BERTH_TRY(job.mpi, wireup::parse_mode(mpi.empty() ? "auto" : mpi));
  BERTH_TRY(job.gpus, gpus_from_json(j));
  return job;
}

json outcome_to_json(const JobOutcome& o) {
  json ranks = json::array();
  for (const auto& r : o.ranks) {
    json rank = {{"rank", r.rank}, {"app", r.app}, {"pid", r.pid}, {"started", r.started},
                 {"failure", r.failure}};
    if (r.status) {
      rank["status"] = {r.status->kind == ExitStatus::kSignaled, r.status->code, r.status->signal,
                        r.status->core_dumped};
    }
    ranks.push_back(std::move(rank));
  }
  return {{"exit_code", o.exit_code},
          {"timed_out", o.timed_out},
          {"messages", o.messages},
          {"ranks", std::move(ranks)}};
}

Result<JobOutcome> outcome_from_json(const json& j) {
  if (!j.is_object()) return fail(Errc::kInvalidInput, "an outcome is not an object");
  JobOutcome o;
  BERTH_TRY(int64_t code, number_of(j, "exit_code", 1, 0, 255));
  o.exit_code = static_cast<int>(code);
  BERTH_TRY(o.timed_out, flag_of(j, "timed_out"));
  BERTH_TRY(o.messages, texts_of(j, "messages"));
  auto ranks = j.find("ranks");
  if (ranks == j.end()) return o;
  if (!ranks->is_array()) return fail(Errc::kInvalidInput, "'ranks' is not a list");
  for (const auto& r : *ranks) {
    if (!r.is_object()) return fail(Errc::kInvalidInput, "a rank is not an object");
    RankOutcome ro;
    BERTH_TRY(int64_t rank, number_of(r, "rank", 0, 0, 1 << 24));
    BERTH_TRY(int64_t app, number_of(r, "app", 0, 0, 1 << 24));
    BERTH_TRY(int64_t pid, number_of(r, "pid", -1, -1, (int64_t{1} << 31) - 1));
    ro.rank = static_cast<int>(rank);
    ro.app = static_cast<int>(app);
    ro.pid = static_cast<pid_t>(pid);
    BERTH_TRY(ro.started, flag_of(r, "started"));
    BERTH_TRY(ro.failure, text_of(r, "failure", false));
    if (auto s = r.find("status"); s != r.end()) {
      auto small = [](const json& v) {
        return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 255;
      };
      if (!s->is_array() || s->size() != 4 || !(*s)[0].is_boolean() || !small((*s)[1]) ||
          !small((*s)[2]) || !(*s)[3].is_boolean()) {
        return fail(Errc::kInvalidInput, "a rank's 'status' is not [signaled, code, signal, core]");
      }
      ExitStatus st;
      st.kind = (*s)[0].get<bool>() ? ExitStatus::kSignaled : ExitStatus::kExited;
      st.code = (*s)[1].get<int>();
      st.signal = (*s)[2].get<int>();
      st.core_dumped = (*s)[3].get<bool>();
      ro.status = st;
    }
    o.ranks.push_back(std::move(ro));
  }
  return o;
}

Result<json> parse_message(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    // Where it stops parsing, for the message: parse again, with exceptions.
    try {
      (void)json::parse(text);
    } catch (const json::parse_error& e) {
      return fail(Errc::kInvalidInput, fmt::format("{}: not JSON at byte {}: {}", what, e.byte,
                                                   str::printable(text.substr(0, 80))));
    }
    return fail(Errc::kInvalidInput, fmt::format("{}: not JSON", what));
  }
  if (!j.is_object()) return fail(Errc::kInvalidInput, fmt::format("{}: not a JSON object", what));
  return j;
}

}  // namespace berth::launch::agent
