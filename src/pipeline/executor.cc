// The executor (spec 04 §7): ready steps, keys, the store, the pool, launch.
#include "pipeline/executor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "launch/job.h"
#include "pipeline/canonical.h"
#include "pipeline/command.h"
#include "pipeline/key.h"
#include "place/launcher.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::pipeline {

const char* step_state_name(StepState s) {
  switch (s) {
    case StepState::kPending: return "pending";
    case StepState::kCached: return "cached";
    case StepState::kExecuted: return "executed";
    case StepState::kFailed: return "failed";
    case StepState::kSkipped: return "skipped";
    case StepState::kRefused: return "refused";
    case StepState::kCancelled: return "cancelled";
  }
  return "pending";
}

int RunReport::count(StepState s) const {
  int n = 0;
  for (const auto& st : steps) n += st.state == s;
  return n;
}

int RunReport::exit_code() const {
  if (count(StepState::kCancelled)) return 130;
  if (count(StepState::kFailed) || count(StepState::kRefused)) return 1;
  return 0;
}

namespace {

using SteadyClock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// spec 05: the kind of row a step's result is written under.
constexpr std::string_view kStepsRow = "steps";

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The SHA-256 of a file, streamed: inputs may be large.
Result<std::string> hash_file_bytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno == ENOENT ? Errc::kNotFound : Errc::kIo,
                fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  Sha256 h;
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(Errc::kIo, fmt::format("{}: cannot read: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return "sha256:" + h.finish_hex();
}

// The canonical hash of an output file under `form`.
Result<CanonicalHash> hash_output(const std::string& path, const std::string& form_text,
                                  const std::string& object) {
  BERTH_TRY(CanonicalForm form, parse_canonical_form(form_text));
  if (form.kind == CanonicalForm::Kind::kBytes) return CanonicalHash{form.name(), object};
  BERTH_TRY(std::string bytes, files::read_file(path, 1ull << 32));
  CommandHook hook = [](const std::vector<std::string>& argv, std::string_view) {
    return Result<std::string>(fail(Errc::kUnsupported,
                                    fmt::format("canonicaliser commands ('{}') are not run yet",
                                                str::join(argv, " "))));
  };
  return canonical_hash(form, bytes, hook);
}

// Hard-links `src` to `dst`, or copies it where a link is impossible.
Result<void> link_or_copy(const std::string& src, const std::string& dst) {
  if (::link(src.c_str(), dst.c_str()) == 0) return Ok{};
  std::error_code ec;
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot copy {} to {}: {}", src, dst, ec.message()));
  return Ok{};
}

struct Done {
  size_t step;
  StepRecord record;
  std::vector<Divergence> divergences;
  std::vector<std::string> problems;
  uint64_t grant = 0;
};

class Executor {
 public:
  Executor(const Graph& g, store::ObjectStore& s, place::Pool& p, const Env& parent,
           const RunOptions& o)
      : g_(g), store_(s), pool_(p), parent_(parent), o_(o) {}

  Result<RunReport> run();

 private:
  Result<void> read_tool_versions();
  Result<void> check_fits();
  // Computes the step's key from its inputs' hashes; fails for an unreadable input.
  Result<std::string> key_for(size_t i);
  // A cached result: every output's object verified and materialised. nullopt when
  // the store has no (usable) result for the key.
  std::optional<StepRecord> try_cached(size_t i, const std::string& key);
  void start(size_t i, place::Grant grant, std::string key);
  Done execute(size_t i, const place::Placement& p, const std::string& key);
  Result<void> materialize_results(const StepRecord& r, std::vector<std::string>* problems);
  void skip_dependents(size_t i, const std::string& why);
  double now_s() const {
    return std::chrono::duration<double>(SteadyClock::now() - t0_).count();
  }

  const Graph& g_;
  store::ObjectStore& store_;
  place::Pool& pool_;
  const Env& parent_;
  const RunOptions& o_;
  ToolVersions tools_;
  SteadyClock::time_point t0_;
  RunReport report_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::vector<Done> done_;
  int wake_[2] = {-1, -1};
  size_t running_ = 0;
  std::atomic<uint64_t> staging_seq_{0};
};

Result<void> Executor::read_tool_versions() {
  for (const auto& [name, tool] : g_.tools) {
    auto out = place::VersionProbe::real().run(tool.version);
    if (!out.ok()) {
      return out.error().with_context(fmt::format("{}: tool '{}': version command", g_.path, name));
    }
    tools_[name] = *out;
  }
  return Ok{};
}

Result<void> Executor::check_fits() {
  for (const Step& s : g_.steps) {
    place::Pool empty(pool_.nodes());
    place::Request r;
    r.tasks = s.tasks;
    r.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
    r.gpus = s.gpus;
    r.nodes = s.nodes;
    auto g = empty.grant(r);
    if (!g.ok()) {
      return fail(Errc::kRefused, fmt::format("{}: step '{}' can never run here: {}", g_.path,
                                              s.name, g.error().message()));
    }
  }
  return Ok{};
}

Result<std::string> Executor::key_for(size_t i) {
  const Step& s = g_.steps[i];
  InputHashes hashes;
  for (const auto& [name, input] : s.inputs) {
    auto& list = hashes[name];
    for (const InputItem& item : input.items) {
      if (item.kind == InputItem::Kind::kFile) {
        // The index answers when the file's stamp is unchanged; a file is remembered
        // only when its stamp was the same before and after hashing (index.h).
        std::optional<FileStamp> before;
        if (o_.index) {
          if (auto st = FileStamp::of(item.path); st.ok()) {
            before = *st;
            if (auto known = o_.index->file_hash(item.path, *st)) {
              list.push_back({"bytes", *known});
              continue;
            }
          }
        }
        BERTH_TRY(std::string h, hash_file_bytes(item.path));
        if (o_.index && before) {
          if (auto after = FileStamp::of(item.path); after.ok() && *after == *before) {
            o_.index->remember_file(item.path, *before, h);
          }
        }
        list.push_back({"bytes", h});
      } else {
        const auto& up = report_.steps[item.step].outputs;
        auto it = up.find(item.output);
        if (it == up.end()) {
          return fail(Errc::kInternal, fmt::format("step '{}': input '{}' from '{}' is not "
                                                   "known yet",
                                                   s.name, name, g_.steps[item.step].name));
        }
        list.push_back({it->second.form, it->second.canonical});
      }
    }
  }
  return key_of(s, hashes, tools_);
}

std::optional<StepRecord> Executor::try_cached(size_t i, const std::string& key) {
  // The index remembers rows this machine has read or written; the store is the
  // authority, and every object is still checked there.
  std::optional<std::string> text;
  if (o_.index) text = o_.index->step_row(key);
  if (!text) {
    auto row = store_.get_row(store::row_address(kStepsRow, key));
    if (!row.ok() || !row->has_value()) return std::nullopt;
    text = **row;
    if (o_.index) o_.index->remember_step(key, *text);
  }
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("outputs") || !j["outputs"].is_object()) {
    report_.problems.push_back(fmt::format("step '{}': the row for key {} does not parse; "
                                           "recomputing",
                                           g_.steps[i].name, key));
    return std::nullopt;
  }
  StepRecord r = report_.steps[i];
  r.key = key;
  for (const std::string& out : g_.steps[i].outputs) {
    if (!j["outputs"].contains(out)) return std::nullopt;
    const json& o = j["outputs"][out];
    StepRecord::Output rec{o.value("object", ""), o.value("form", "bytes"),
                           o.value("canonical", "")};
    auto has = store_.has_object(rec.object);
    if (!has.ok() || !*has) return std::nullopt;
    r.outputs[out] = rec;
  }
  // A cache hit adopts the record of the run that computed it.
  if (j.contains("provenance") && j["provenance"].is_object()) {
    r.node = j["provenance"].value("host", "");
    r.cores = j["provenance"].value("cores", "");
  }
  std::vector<std::string> problems;
  if (!materialize_results(r, &problems).ok() || !problems.empty()) {
    for (auto& p : problems) report_.problems.push_back(p);
    return std::nullopt;  // a corrupt object is recomputed
  }
  r.state = StepState::kCached;
  r.reason = "cached: the store has a result for this key";
  return r;
}

Result<void> Executor::materialize_results(const StepRecord& r, std::vector<std::string>* problems) {
  std::string dir = fmt::format("{}/{}", o_.results_dir, r.name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot create {}: {}", dir, ec.message()));
  for (const auto& [out, rec] : r.outputs) {
    std::string dest = dir + "/" + out;
    fs::remove(dest, ec);  // a materialised file is replaced, never written into
    auto got = store_.materialize(rec.object, dest);
    if (!got.ok()) return got.error();
    if (!got->present()) {
      problems->push_back(got->problem.empty()
                              ? fmt::format("step '{}': object {} of output '{}' is missing",
                                            r.name, rec.object, out)
                              : fmt::format("step '{}': {}", r.name, got->problem));
    }
  }
  return Ok{};
}

Done Executor::execute(size_t i, const place::Placement& p, const std::string& key) {
  const Step& s = g_.steps[i];
  Done d;
  d.step = i;
  d.record = report_.steps[i];
  StepRecord& r = d.record;
  r.key = key;
  r.node = p.nodes.empty() ? o_.host : p.nodes[0];
  r.cores = place::format_ids(p.cores.empty() ? std::vector<int>{} : p.cores[0]);
  r.start_s = now_s();
  auto failed = [&](std::string why, int code = 1) {
    r.state = StepState::kFailed;
    r.reason = std::move(why);
    r.exit_code = code;
    r.end_s = now_s();
    return d;
  };

  // 1. A staging directory of its own: inputs linked in, outputs written there.
  std::string stage = fmt::format("{}/{}.{}.{}", o_.staging_dir, s.name, key.substr(0, 12),
                                  staging_seq_++);
  std::error_code ec;
  fs::remove_all(stage, ec);
  fs::create_directories(stage + "/in", ec);
  fs::create_directories(stage + "/out", ec);
  if (ec) return failed(fmt::format("cannot create staging directory {}: {}", stage, ec.message()));
  StagedPaths paths;
  for (const auto& [name, input] : s.inputs) {
    for (size_t k = 0; k < input.items.size(); ++k) {
      const InputItem& item = input.items[k];
      std::string dest = fmt::format("{}/in/{}.{}", stage, name, k);
      if (item.kind == InputItem::Kind::kFile) {
        auto linked = link_or_copy(item.path, dest);
        if (!linked.ok()) return failed(linked.error().message());
      } else {
        const auto& rec = report_.steps[item.step].outputs.at(item.output);
        auto got = store_.materialize(rec.object, dest);
        if (!got.ok()) return failed(got.error().message());
        if (!got->present()) {
          return failed(fmt::format("input '{}' ({}) is not in the store: {}", name, item.text,
                                    got->problem));
        }
      }
      paths.inputs[name].push_back(dest);
    }
  }
  for (const std::string& out : s.outputs) paths.outputs[out] = stage + "/out/" + out;
  auto cmd = render_command(s, paths);
  if (!cmd.ok()) return failed(cmd.error().message());

  // 2. Launch: bound to its cores on this node, or through the machine's launcher.
  launch::JobSpec job;
  launch::AppSpec app;
  app.ranks = 1;
  app.cwd = stage;
  bool here = r.node == o_.host;
  if (here) {
    app.argv = cmd->argv;
    app.cpu_set = p.cores.empty() ? std::vector<int>{} : p.cores[0];
    app.ranks = s.tasks;
  } else {
    if (!o_.machine || !o_.launcher) {
      return failed(fmt::format("placed on '{}', but no launcher reaches other nodes", r.node));
    }
    place::LaunchSpec ls;
    ls.tasks = s.tasks;
    ls.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
    ls.command = cmd->argv;
    ls.memory_cap = s.memory_cap_mb;
    auto rendered = place::render(*o_.machine, *o_.launcher, p, ls);
    if (!rendered.ok()) return failed(rendered.error().message());
    app.argv = rendered->argv;
  }
  for (const auto& [k, v] : cmd->env) app.env.push_back({launch::EnvDirective::kSet, k, v, "", false});
  job.apps.push_back(app);
  job.bind = launch::BindTo::kNone;
  job.node = o_.host;
  job.stdin_mode = launch::StdinMode::kNone;
  job.own_signals = false;
  job.cancel_fd = o_.cancel_fd;
  job.output = launch::OutputMode::kPlain;
  std::string log;
  std::mutex log_mu;
  launch::OutputSinks sinks;
  sinks.out = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.append(line);
  };
  sinks.err = sinks.out;
  auto outcome = launch::run_job(job, parent_, launch::Spawner::real(), sinks);
  if (!outcome.ok()) return failed(outcome.error().message());
  if (!log.empty()) {
    // Each step's output reaches the user once, prefixed, after the step.
    std::string prefixed;
    for (auto line : str::split(log, '\n')) {
      if (!line.empty()) prefixed += fmt::format("[{}] {}\n", s.name, line);
    }
    std::fwrite(prefixed.data(), 1, prefixed.size(), stderr);
  }
  if (outcome->exit_code != 0) {
    std::string why = outcome->messages.empty() ? "failed" : outcome->messages[0];
    if (outcome->exit_code == 130) {
      r.state = StepState::kCancelled;
      r.reason = "cancelled";
      r.end_s = now_s();
      fs::remove_all(stage, ec);
      return d;
    }
    fs::remove_all(stage, ec);
    return failed(why, outcome->exit_code);
  }

  // 3. Publish: every output as an object, then — only then — the row.
  json outputs = json::object();
  for (const std::string& out : s.outputs) {
    std::string path = paths.outputs[out];
    if (!files::exists(path)) {
      fs::remove_all(stage, ec);
      return failed(fmt::format("declared output '{}' was not written ({})", out, path));
    }
    auto object = store_.put_object_file(path);
    if (!object.ok()) return failed(object.error().message());
    auto canon = hash_output(path, s.canonical.count(out) ? s.canonical.at(out) : "bytes", *object);
    if (!canon.ok()) return failed(canon.error().with_context("output '" + out + "'").message());
    r.outputs[out] = {*object, canon->form, canon->hash};
    outputs[out] = {{"object", *object}, {"form", canon->form}, {"canonical", canon->hash}};
  }
  r.end_s = now_s();
  json row;
  row["version"] = 1;
  row["key"] = key;
  row["step"] = s.name;
  row["outputs"] = outputs;
  json prov;
  prov["command"] = describe_command(s);
  prov["tools"] = json::object();
  for (const auto& t : s.tools) prov["tools"][t] = tools_.count(t) ? tools_.at(t) : "";
  prov["engine_version"] = o_.engine_version;
  prov["platform"] = o_.platform;
  prov["host"] = r.node;
  prov["cores"] = r.cores;
  prov["start"] = iso_now();
  prov["elapsed_s"] = r.end_s - r.start_s;
  row["provenance"] = prov;
  auto put = store_.put_row(store::row_address(kStepsRow, key), row.dump());
  if (!put.ok()) return failed(put.error().message());
  if (o_.index) o_.index->remember_step(key, put->created ? row.dump() : put->existing);
  if (!put->created) {
    // Another computation of this key won; it must mean the same (spec 06).
    json theirs = json::parse(put->existing, nullptr, false);
    for (auto& [out, rec] : r.outputs) {
      std::string other = theirs.is_discarded() ? "" : theirs["outputs"][out].value("canonical", "");
      if (other != rec.canonical) d.divergences.push_back({s.name, key, out, rec.canonical, other});
      if (!theirs.is_discarded()) rec.object = theirs["outputs"][out].value("object", rec.object);
    }
  }
  auto m = materialize_results(r, &d.problems);
  fs::remove_all(stage, ec);
  if (!m.ok()) return failed(m.error().message());
  r.state = StepState::kExecuted;
  r.exit_code = 0;
  return d;
}

void Executor::start(size_t i, place::Grant grant, std::string key) {
  report_.steps[i].state = StepState::kPending;
  ++running_;
  threads_.emplace_back([this, i, grant = std::move(grant), key = std::move(key)] {
    Done d = execute(i, grant.placement, key);
    d.grant = grant.id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(d));
    }
    char c = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_[1], &c, 1);
  });
}

void Executor::skip_dependents(size_t i, const std::string& why) {
  for (size_t j = i + 1; j < g_.steps.size(); ++j) {
    for (size_t dep : g_.steps[j].deps) {
      auto st = report_.steps[dep].state;
      if (dep == i || st == StepState::kSkipped || st == StepState::kFailed) {
        if (report_.steps[j].state == StepState::kPending) {
          report_.steps[j].state = StepState::kSkipped;
          report_.steps[j].reason = why;
        }
      }
    }
  }
}

Result<RunReport> Executor::run() {
  t0_ = SteadyClock::now();
  report_.pipeline = g_.name;
  report_.store = store_.describe();
  report_.started = iso_now();
  for (const Step& s : g_.steps) {
    StepRecord r;
    r.name = s.name;
    report_.steps.push_back(r);
  }
  // Before anything runs: every step must be able to fit, every tool must answer.
  BERTH_CHECK(check_fits());
  BERTH_CHECK(read_tool_versions());
  if (::pipe2(wake_, O_CLOEXEC) != 0) return fail(Errc::kIo, "pipe: " + std::string(std::strerror(errno)));
  // One transaction for the run's index writes: a 10,000-step rerun is one commit.
  if (o_.index) (void)o_.index->begin();

  std::set<size_t> prepared;             // keyed and found not cached: waiting for a grant
  std::map<size_t, std::string> keys;
  bool cancelled = false;
  bool stop_new = false;
  for (;;) {
    // Start every ready step that fits, in graph order.
    for (size_t i = 0; i < g_.steps.size() && !cancelled; ++i) {
      StepRecord& rec = report_.steps[i];
      if (rec.state != StepState::kPending || rec.start_s < 0) continue;
      bool ready = true;
      for (size_t dep : g_.steps[i].deps) {
        auto st = report_.steps[dep].state;
        ready &= st == StepState::kExecuted || st == StepState::kCached;
      }
      if (!ready) continue;
      if (!keys.count(i)) {
        auto key = key_for(i);
        if (!key.ok()) {
          rec.state = StepState::kFailed;
          rec.reason = key.error().message();
          skip_dependents(i, fmt::format("not run: '{}' failed", rec.name));
          continue;
        }
        keys[i] = *key;
        if (auto cached = try_cached(i, *key)) {
          rec = *cached;
          if (o_.progress) o_.progress(report_);
          i = static_cast<size_t>(-1);  // a new result may make earlier steps ready
          continue;
        }
        if (o_.dry_run) {
          rec.state = StepState::kSkipped;
          rec.key = *key;
          rec.reason = "would run: no result in the store for its key";
          continue;
        }
      }
      if (stop_new) continue;
      place::Request r;
      const Step& s = g_.steps[i];
      r.tasks = s.tasks;
      r.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
      r.gpus = s.gpus;
      r.nodes = s.nodes;
      auto grant = pool_.grant(r);
      if (!grant.ok()) {
        rec.state = StepState::kRefused;
        rec.reason = grant.error().message();
        skip_dependents(i, fmt::format("not run: '{}' was refused", rec.name));
        continue;
      }
      if (!grant->has_value()) continue;  // waits for a release
      rec.start_s = -1;                    // marks it running
      start(i, std::move(**grant), keys[i]);
      if (o_.progress) o_.progress(report_);
    }
    if (o_.dry_run) {
      // A dry run stops at the first step whose inputs it cannot know.
      for (auto& rec : report_.steps) {
        if (rec.state == StepState::kPending) {
          rec.state = StepState::kSkipped;
          rec.reason = "would run: an input it reads would be recomputed";
        }
      }
      break;
    }
    if (running_ == 0) break;

    // Wait for a step to end, or for the run to be cancelled.
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {o_.cancel_fd, POLLIN, 0}};
    int n = ::poll(fds, o_.cancel_fd >= 0 && !cancelled ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (o_.cancel_fd >= 0 && (fds[1].revents & POLLIN) && !cancelled) {
      cancelled = true;  // running jobs see the same descriptor and end themselves
      for (auto& rec : report_.steps) {
        if (rec.state == StepState::kPending && rec.start_s >= 0) {
          rec.state = StepState::kCancelled;
          rec.reason = "not run: the run was interrupted";
        }
      }
    }
    if (fds[0].revents & POLLIN) {
      char buf[64];
      [[maybe_unused]] ssize_t r = ::read(wake_[0], buf, sizeof buf);
    }
    std::vector<Done> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished.swap(done_);
    }
    for (Done& d : finished) {
      --running_;
      pool_.release(d.grant);
      report_.steps[d.step] = d.record;
      for (auto& dv : d.divergences) report_.divergences.push_back(dv);
      for (auto& p : d.problems) report_.problems.push_back(p);
      if (d.record.state == StepState::kFailed) {
        skip_dependents(d.step, fmt::format("not run: '{}' failed", d.record.name));
        if (o_.fail_fast) stop_new = true;
      }
      if (o_.progress) o_.progress(report_);
    }
  }
  for (auto& t : threads_) t.join();
  if (o_.index) (void)o_.index->commit();  // a failed commit only loses the cache
  ::close(wake_[0]);
  ::close(wake_[1]);
  for (auto& rec : report_.steps) {
    if (rec.state == StepState::kPending) {
      rec.state = cancelled ? StepState::kCancelled : StepState::kSkipped;
      if (rec.reason.empty()) rec.reason = cancelled ? "not run: the run was interrupted"
                                                     : "not run: --fail-fast";
    }
  }
  report_.elapsed_s = now_s();
  return report_;
}

}  // namespace

Result<RunReport> run_graph(const Graph& graph, store::ObjectStore& store, place::Pool& pool,
                            const Env& parent, const RunOptions& options) {
  Executor e(graph, store, pool, parent, options);
  return e.run();
}

std::string report_json(const RunReport& r) {
  json j;
  j["version"] = 1;
  j["pipeline"] = r.pipeline;
  j["store"] = r.store;
  j["started"] = r.started;
  j["elapsed_s"] = r.elapsed_s;
  for (StepState s : {StepState::kExecuted, StepState::kCached, StepState::kFailed,
                      StepState::kSkipped, StepState::kRefused, StepState::kCancelled}) {
    j[step_state_name(s)] = r.count(s);
  }
  j["divergences"] = json::array();
  for (const auto& d : r.divergences) {
    j["divergences"].push_back({{"step", d.step}, {"key", d.key}, {"output", d.output},
                                {"ours", d.ours}, {"theirs", d.theirs}});
  }
  j["problems"] = r.problems;
  j["steps"] = json::array();
  for (const auto& s : r.steps) {
    json o = json::object();
    for (const auto& [name, out] : s.outputs) {
      o[name] = {{"object", out.object}, {"form", out.form}, {"canonical", out.canonical}};
    }
    j["steps"].push_back({{"name", s.name}, {"state", step_state_name(s.state)}, {"key", s.key},
                          {"reason", s.reason}, {"node", s.node}, {"cores", s.cores},
                          {"start_s", s.start_s}, {"end_s", s.end_s}, {"exit_code", s.exit_code},
                          {"outputs", o}});
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string report_html(const RunReport& r) {
  // A timeline of steps on cores: one lane per node:core, one bar per executed step.
  std::map<std::string, int> lanes;
  for (const auto& s : r.steps) {
    if (s.state != StepState::kExecuted) continue;
    lanes.emplace(s.node + ":" + s.cores, 0);
  }
  int idx = 0;
  for (auto& [k, v] : lanes) v = idx++;
  double total = std::max(r.elapsed_s, 1e-3);
  auto esc = [](std::string_view t) {
    std::string o;
    for (char c : t) {
      if (c == '<') o += "&lt;";
      else if (c == '>') o += "&gt;";
      else if (c == '&') o += "&amp;";
      else if (c == '"') o += "&quot;";
      else o += c;
    }
    return o;
  };
  std::string bars;
  for (const auto& s : r.steps) {
    if (s.state != StepState::kExecuted) continue;
    int lane = lanes[s.node + ":" + s.cores];
    double x = 160 + 800 * s.start_s / total;
    double w = std::max(2.0, 800 * (s.end_s - s.start_s) / total);
    bars += fmt::format(
        "<rect class=\"step\" data-step=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"18\"><title>{} {:.2f}-{:.2f}s</title></rect>\n",
        esc(s.name), x, 30 + lane * 24, w, esc(s.name), s.start_s, s.end_s);
  }
  std::string labels;
  for (const auto& [k, v] : lanes) {
    labels += fmt::format("<text x=\"4\" y=\"{}\">{}</text>\n", 44 + v * 24, esc(k));
  }
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>berth run: {}</title>\n"
      "<style>body{{font-family:sans-serif}} rect.step{{fill:#4a7}} "
      "text{{font-size:12px}}</style></head><body>\n<h1>{}</h1>\n<p id=\"counts\">executed {}, "
      "cached {}, failed {}, skipped {}, refused {}; {:.2f} s</p>\n"
      "<svg id=\"timeline\" width=\"980\" height=\"{}\">\n{}{}</svg>\n</body></html>\n",
      esc(r.pipeline), esc(r.pipeline), r.count(StepState::kExecuted), r.count(StepState::kCached),
      r.count(StepState::kFailed), r.count(StepState::kSkipped), r.count(StepState::kRefused),
      r.elapsed_s, 40 + static_cast<int>(lanes.size()) * 24, labels, bars);
}

}  // namespace berth::pipeline
