// Collection (collect.h, spec 05 §10).
#include "pipeline/collect.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "pipeline/dir_output.h"
#include "pipeline/lease.h"
#include "pipeline/report.h"
#include "pipeline/step_cache.h"
#include "store/tree.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::json;

const std::string kRunsPrefix = store::row_address("runs", "");
const std::string kStepsPrefix = store::row_address(kStepsRow, "");
const std::string kLeasesPrefix = store::row_address(kLeasesRow, "");

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// What is reached, as it is learnt.
struct Reach {
  std::set<std::string> objects;
  std::set<std::string> rows;
  std::set<std::string> trees;  // manifests of directory outputs (their files: expand())
  std::vector<std::string> problems;

  void object(const json& j) {
    if (j.is_string() && store::check_object_name(j.get<std::string>()).ok()) {
      objects.insert(j.get<std::string>());
    }
  }
  // A step row's or a report step's outputs and log.
  void outputs_and_log(const json& j) {
    if (!j.is_object()) return;
    if (j.contains("outputs") && j["outputs"].is_object()) {
      for (const auto& [name, out] : j["outputs"].items()) {
        if (!out.is_object() || !out.contains("object")) continue;
        object(out["object"]);
        if (out.value("form", "") == kTreeForm && out["object"].is_string()) {
          trees.insert(out["object"].get<std::string>());
        }
      }
    }
    if (j.contains("log")) object(j["log"]);
  }
  // Every file of every tree reached: a tree's manifest names them (store/tree.h).
  Result<void> expand(store::ObjectStore& s) {
    for (const std::string& manifest : trees) {
      std::vector<store::TreeEntry> entries;
      BERTH_TRY(store::ObjectRead got, store::get_tree(s, manifest, &entries));
      if (!got.present()) {
        problems.push_back(fmt::format("tree {}: {}; the files it names are not known",
                                       manifest, got.problem.empty() ? "not in the store"
                                                                     : got.problem));
        continue;
      }
      for (std::string& name : store::tree_objects(entries)) objects.insert(std::move(name));
    }
    return Ok{};
  }
};

// A run's report: when it started, its pipeline, its steps' object.
struct Run {
  std::string address;
  int64_t time_ms = 0;
  std::string started, pipeline, steps_object;
  json steps_changed;  // the run's entries that differ from the object's
  bool readable = false;
};

Result<Run> read_run(store::ObjectStore& s, const store::StoreEntry& e) {
  Run r;
  r.address = e.name;
  r.time_ms = e.time_ms;
  BERTH_TRY(std::optional<std::string> text, s.get_row(e.name));
  if (!text || str::json_deeper_than(*text, kMaxReportDepth)) return r;
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return r;
  r.started = j.value("started", "");
  r.pipeline = j.value("pipeline", "");
  r.steps_object = j.value("steps_object", "");
  if (j.contains("steps_changed") && j["steps_changed"].is_array())
    r.steps_changed = std::move(j["steps_changed"]);
  r.readable = true;
  return r;
}

// Everything run `r` reaches: its report's steps object, and per step its row, its
// outputs' objects and its log.
Result<void> reach_run(store::ObjectStore& s, const Run& r, Reach& reach) {
  reach.rows.insert(r.address);
  if (!r.readable) {
    reach.problems.push_back(fmt::format("{}: not a run report; kept", r.address));
    return Ok{};
  }
  if (store::check_object_name(r.steps_object).ok()) reach.objects.insert(r.steps_object);
  BERTH_TRY(store::ObjectRead steps, s.get_object(r.steps_object));
  if (!steps.present()) {
    reach.problems.push_back(
        fmt::format("{}: its steps ({}) are not in the store", r.address, r.steps_object));
    return Ok{};
  }
  if (str::json_deeper_than(steps.bytes, kMaxReportDepth)) return Ok{};
  json j = json::parse(steps.bytes, nullptr, false);
  if (j.is_discarded() || !j.is_array()) {
    reach.problems.push_back(fmt::format("{}: its steps do not parse", r.address));
    return Ok{};
  }
  auto reach_steps = [&reach](const json& entries) {
    for (const auto& step : entries) {
      if (!step.is_object()) continue;
      std::string key = step.value("key", "");
      if (!key.empty() && store::check_row_address(store::row_address(kStepsRow, key)).ok()) {
        reach.rows.insert(store::row_address(kStepsRow, key));
      }
      reach.outputs_and_log(step);
    }
  };
  reach_steps(j);
  if (r.steps_changed.is_array()) reach_steps(r.steps_changed);
  return Ok{};
}

// What step row `address` reaches.
Result<void> reach_step_row(store::ObjectStore& s, const std::string& address, Reach& reach) {
  BERTH_TRY(std::optional<std::string> text, s.get_row(address));
  if (!text) return Ok{};
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded()) {
    reach.problems.push_back(fmt::format("{}: does not parse; what it names is not known", address));
    return Ok{};
  }
  reach.outputs_and_log(j);
  return Ok{};
}

}  // namespace

uint64_t CollectReport::bytes() const {
  uint64_t n = 0;
  for (const auto& d : deleted) n += d.bytes;
  return n;
}

size_t CollectReport::count(std::string_view kind) const {
  return static_cast<size_t>(
      std::count_if(deleted.begin(), deleted.end(), [&](const Collected& d) { return d.kind == kind; }));
}

namespace {

// One collection, stage by stage: what the store holds, what is kept and what goes,
// and the deletion.
class Collection {
 public:
  Collection(store::ObjectStore& s, const CollectOptions& o) : s_(s), o_(o) {
    const Clock& clock = o.clock != nullptr ? *o.clock : Clock::real();
    now_ = std::chrono::duration_cast<std::chrono::milliseconds>(clock.wall().time_since_epoch())
               .count();
    cutoff_ = now_ - o.grace.count();
  }

  // 1. What the store holds: objects first, then rows, so that every row naming an
  // object listed here is listed too (an object is stored before the row naming it).
  Result<void> list() {
    BERTH_TRY(objects_, s_.list_objects());
    BERTH_TRY(rows_, s_.list_row_entries("rows"));
    BERTH_TRY(debris_, s_.list_debris());
    for (const auto& r : rows_) listed_rows_.insert(r.name);
    return Ok{};
  }

  // 2. The roots: the last N runs, the last N of each pipeline named, and every run
  // younger than the grace period.
  Result<void> keep_runs() {
    std::vector<Run> runs;
    for (const auto& e : rows_) {
      if (!starts_with(e.name, kRunsPrefix)) continue;
      BERTH_TRY(Run r, read_run(s_, e));
      runs.push_back(std::move(r));
    }
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
      return std::tie(a.started, a.time_ms, a.address) > std::tie(b.started, b.time_ms, b.address);
    });
    rep_.runs = runs.size();
    std::map<std::string, size_t> per_pipeline;
    std::set<std::string> named(o_.pipelines.begin(), o_.pipelines.end());
    for (size_t i = 0; i < runs.size(); ++i) {
      const Run& r = runs[i];
      bool keep = i < o_.keep_runs || r.time_ms >= cutoff_ || !r.readable;
      if (named.count(r.pipeline) && per_pipeline[r.pipeline]++ < o_.keep_runs) keep = true;
      if (keep) {
        ++rep_.runs_kept;
        BERTH_CHECK(reach_run(s_, r, reach_));
      } else {
        doomed_runs_.push_back(r.address);
      }
    }
    return Ok{};
  }

  // 3. Step rows: reached by a kept run, or younger than the grace period, and what
  // they reach; the rest are doomed. Rows of kinds this build does not know are kept.
  // Lease rows are gathered by step key for the next stage.
  Result<void> keep_step_rows() {
    for (const auto& e : rows_) {
      sizes_[e.name] = e.bytes;
      if (starts_with(e.name, kStepsPrefix)) {
        if (reach_.rows.count(e.name) || e.time_ms >= cutoff_) {
          reach_.rows.insert(e.name);
          BERTH_CHECK(reach_step_row(s_, e.name, reach_));
        } else {
          doomed_steps_.push_back(e.name);
        }
      } else if (starts_with(e.name, kLeasesPrefix)) {
        std::string rest = e.name.substr(kLeasesPrefix.size());
        size_t slash = rest.find('/');
        if (slash != std::string::npos) leases_[rest.substr(0, slash)].push_back(&e);
      }
    }
    return Ok{};
  }

  // 4. Lease rows: a key's go when its top generation holds nothing (released,
  // expired or unreadable) and was written before the grace period; a live claim is
  // never touched. Highest generation first, so that what is left stays a key's
  // generations from 0 for as long as any are left.
  Result<void> doom_leases() {
    for (auto& [key, gens] : leases_) {
      // By generation, highest first; a name that is not a generation sorts last.
      auto gen = [](const store::StoreEntry* e) -> int64_t {
        std::string_view g = std::string_view(e->name).substr(e->name.rfind('/') + 1);
        if (g.empty() || g.size() > 9 || !std::all_of(g.begin(), g.end(), str::is_digit)) {
          return -1;
        }
        return std::stoll(std::string(g));
      };
      std::sort(gens.begin(), gens.end(), [&](const auto* a, const auto* b) {
        return std::make_pair(gen(a), a->name) > std::make_pair(gen(b), b->name);
      });
      const store::StoreEntry* top = gens.front();
      if (top->time_ms >= cutoff_) continue;
      BERTH_TRY(std::optional<std::string> text, s_.get_row(top->name));
      if (text) {
        auto rec = decode_lease(*text);
        if (rec && !rec->released && rec->deadline_ms > now_) continue;  // held
      }
      for (const auto* g : gens) doomed_leases_.push_back(g->name);
    }
    return Ok{};
  }

  // 5. Objects no kept row or run reaches, older than the grace period; debris older
  // than it.
  Result<void> doom_objects() {
    BERTH_CHECK(reach_.expand(s_));
    for (const auto& e : objects_) {
      sizes_[e.name] = e.bytes;
      if (!reach_.objects.count(e.name) && e.time_ms < cutoff_) doomed_objects_.push_back(e.name);
    }
    for (const auto& e : debris_) {
      sizes_["debris:" + e.name] = e.bytes;
      if (e.time_ms < cutoff_) doomed_debris_.push_back(e.name);
    }
    for (auto& p : reach_.problems) rep_.problems.push_back(std::move(p));
    return Ok{};
  }

  // A dry run's answer: what would go.
  void report_doomed() {
    record("run", doomed_runs_, "");
    record("step row", doomed_steps_, "");
    record("lease row", doomed_leases_, "");
    record("object", doomed_objects_, "");
    record("debris", doomed_debris_, "debris:");
  }

  // 6. Delete: reports, step rows, lease rows — every row before the objects it
  // names — then the objects, then debris.
  Result<void> delete_doomed() {
    auto spare_rows = [&]() -> Result<std::set<std::string>> {
      BERTH_TRY(Reach fresh, newly_reached());
      return fresh.rows;
    };
    auto spare_objects = [&]() -> Result<std::set<std::string>> {
      BERTH_TRY(Reach fresh, newly_reached());
      return fresh.objects;
    };
    auto none = []() -> Result<std::set<std::string>> { return std::set<std::string>{}; };
    const auto kRow = store::EntryKind::kRow;
    BERTH_TRY(auto gone_runs, s_.collect(kRow, doomed_runs_, cutoff_, none));
    record("run", gone_runs, "");
    BERTH_TRY(auto gone_steps, s_.collect(kRow, doomed_steps_, cutoff_, spare_rows));
    record("step row", gone_steps, "");
    BERTH_TRY(auto gone_leases, s_.collect(kRow, doomed_leases_, cutoff_, none));
    record("lease row", gone_leases, "");
    BERTH_TRY(auto gone_objects,
              s_.collect(store::EntryKind::kObject, doomed_objects_, cutoff_, spare_objects));
    record("object", gone_objects, "");
    BERTH_TRY(auto gone_debris,
              s_.collect(store::EntryKind::kDebris, doomed_debris_, cutoff_, none));
    record("debris", gone_debris, "debris:");
    return Ok{};
  }

  CollectReport take() { return std::move(rep_); }

 private:
  // What rows published since the listing reach: they are spared. Reports first (a
  // run that finished meanwhile reaches its step rows), then step rows.
  Result<Reach> newly_reached() {
    Reach fresh;
    BERTH_TRY(std::vector<store::StoreEntry> now_rows, s_.list_row_entries("rows"));
    for (const auto& e : now_rows) {
      if (listed_rows_.count(e.name)) continue;
      if (starts_with(e.name, kRunsPrefix)) {
        BERTH_TRY(Run r, read_run(s_, e));
        BERTH_CHECK(reach_run(s_, r, fresh));
      }
    }
    for (const auto& e : now_rows) {
      if (starts_with(e.name, kStepsPrefix) &&
          (!listed_rows_.count(e.name) || fresh.rows.count(e.name))) {
        fresh.rows.insert(e.name);
        BERTH_CHECK(reach_step_row(s_, e.name, fresh));
      }
    }
    BERTH_CHECK(fresh.expand(s_));
    return fresh;
  }

  // Entries of `kind` said deleted, each with its size (listed under `key` + name).
  void record(const char* kind, const std::vector<std::string>& names, const char* key) {
    for (const auto& n : names) {
      rep_.deleted.push_back({kind, n, sizes_[std::string(key) + n]});
    }
  }

  store::ObjectStore& s_;
  const CollectOptions& o_;
  int64_t now_ = 0;
  int64_t cutoff_ = 0;  // entries written before it are past the grace period
  // What the store held at the start.
  std::vector<store::StoreEntry> objects_, rows_, debris_;
  std::set<std::string> listed_rows_;
  std::map<std::string, uint64_t> sizes_;  // by name; debris by "debris:" + name
  std::map<std::string, std::vector<const store::StoreEntry*>> leases_;  // by step key
  Reach reach_;  // what the kept runs and rows reach
  std::vector<std::string> doomed_runs_, doomed_steps_, doomed_leases_, doomed_objects_,
      doomed_debris_;
  CollectReport rep_;
};

}  // namespace

Result<CollectReport> collect_store(store::ObjectStore& s, const CollectOptions& o) {
  Collection c(s, o);
  BERTH_CHECK(c.list());
  BERTH_CHECK(c.keep_runs());
  BERTH_CHECK(c.keep_step_rows());
  BERTH_CHECK(c.doom_leases());
  BERTH_CHECK(c.doom_objects());
  if (o.dry_run) {
    c.report_doomed();
  } else {
    BERTH_CHECK(c.delete_doomed());
  }
  return c.take();
}

}  // namespace berth::pipeline
