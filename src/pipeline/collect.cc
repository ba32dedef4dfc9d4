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

Result<CollectReport> collect_store(store::ObjectStore& s, const CollectOptions& o) {
  const Clock& clock = o.clock != nullptr ? *o.clock : Clock::real();
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock.wall().time_since_epoch()).count();
  const int64_t cutoff = now - o.grace.count();
  CollectReport rep;

  // 1. What the store holds: objects first, then rows, so that every row naming an
  // object listed here is listed too (an object is stored before the row naming it).
  BERTH_TRY(std::vector<store::StoreEntry> objects, s.list_objects());
  BERTH_TRY(std::vector<store::StoreEntry> rows, s.list_row_entries("rows"));
  BERTH_TRY(std::vector<store::StoreEntry> debris, s.list_debris());
  std::set<std::string> listed_rows;
  for (const auto& r : rows) listed_rows.insert(r.name);

  // 2. The roots: the last N runs, the last N of each pipeline named, and every run
  // younger than the grace period.
  Reach reach;
  std::vector<Run> runs;
  for (const auto& e : rows) {
    if (!starts_with(e.name, kRunsPrefix)) continue;
    BERTH_TRY(Run r, read_run(s, e));
    runs.push_back(std::move(r));
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
    return std::tie(a.started, a.time_ms, a.address) > std::tie(b.started, b.time_ms, b.address);
  });
  rep.runs = runs.size();
  std::map<std::string, size_t> per_pipeline;
  std::set<std::string> named(o.pipelines.begin(), o.pipelines.end());
  std::vector<const Run*> doomed_runs;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    bool keep = i < o.keep_runs || r.time_ms >= cutoff || !r.readable;
    if (named.count(r.pipeline) && per_pipeline[r.pipeline]++ < o.keep_runs) keep = true;
    if (keep) {
      ++rep.runs_kept;
      BERTH_CHECK(reach_run(s, r, reach));
    } else {
      doomed_runs.push_back(&r);
    }
  }

  // 3. Step rows: reached by a kept run, or younger than the grace period, and what
  // they reach; the rest are doomed. Rows of kinds this build does not know are kept.
  std::vector<std::string> doomed_steps, doomed_leases;
  std::map<std::string, uint64_t> sizes;
  std::map<std::string, std::vector<const store::StoreEntry*>> leases;  // by step key
  for (const auto& e : rows) {
    sizes[e.name] = e.bytes;
    if (starts_with(e.name, kStepsPrefix)) {
      if (reach.rows.count(e.name) || e.time_ms >= cutoff) {
        reach.rows.insert(e.name);
        BERTH_CHECK(reach_step_row(s, e.name, reach));
      } else {
        doomed_steps.push_back(e.name);
      }
    } else if (starts_with(e.name, kLeasesPrefix)) {
      std::string rest = e.name.substr(kLeasesPrefix.size());
      size_t slash = rest.find('/');
      if (slash != std::string::npos) leases[rest.substr(0, slash)].push_back(&e);
    }
  }

  // 4. Lease rows: a key's go when its top generation holds nothing (released,
  // expired or unreadable) and was written before the grace period; a live claim is
  // never touched. Highest generation first, so that what is left stays a key's
  // generations from 0 for as long as any are left.
  for (auto& [key, gens] : leases) {
    // By generation, highest first; a name that is not a generation sorts last.
    auto gen = [](const store::StoreEntry* e) -> int64_t {
      std::string_view g = std::string_view(e->name).substr(e->name.rfind('/') + 1);
      if (g.empty() || g.size() > 9 || !std::all_of(g.begin(), g.end(), str::is_digit)) return -1;
      return std::stoll(std::string(g));
    };
    std::sort(gens.begin(), gens.end(), [&](const auto* a, const auto* b) {
      return std::make_pair(gen(a), a->name) > std::make_pair(gen(b), b->name);
    });
    const store::StoreEntry* top = gens.front();
    if (top->time_ms >= cutoff) continue;
    BERTH_TRY(std::optional<std::string> text, s.get_row(top->name));
    if (text) {
      auto rec = decode_lease(*text);
      if (rec && !rec->released && rec->deadline_ms > now) continue;  // held
    }
    for (const auto* g : gens) doomed_leases.push_back(g->name);
  }

  // 5. Objects no kept row or run reaches, older than the grace period.
  BERTH_CHECK(reach.expand(s));
  std::vector<std::string> doomed_objects;
  for (const auto& e : objects) {
    sizes[e.name] = e.bytes;
    if (!reach.objects.count(e.name) && e.time_ms < cutoff) doomed_objects.push_back(e.name);
  }
  std::vector<std::string> doomed_debris;
  for (const auto& e : debris) {
    sizes["debris:" + e.name] = e.bytes;
    if (e.time_ms < cutoff) doomed_debris.push_back(e.name);
  }
  for (auto& p : reach.problems) rep.problems.push_back(std::move(p));

  auto record = [&](const char* kind, const std::vector<std::string>& names, const char* key) {
    for (const auto& n : names) {
      rep.deleted.push_back({kind, n, sizes[std::string(key) + n]});
    }
  };
  if (o.dry_run) {
    std::vector<std::string> run_names;
    for (const Run* r : doomed_runs) run_names.push_back(r->address);
    record("run", run_names, "");
    record("step row", doomed_steps, "");
    record("lease row", doomed_leases, "");
    record("object", doomed_objects, "");
    record("debris", doomed_debris, "debris:");
    return rep;
  }

  // What rows published since the listing reach: they are spared. Reports first (a
  // run that finished meanwhile reaches its step rows), then step rows.
  auto newly_reached = [&]() -> Result<Reach> {
    Reach fresh;
    BERTH_TRY(std::vector<store::StoreEntry> now_rows, s.list_row_entries("rows"));
    for (const auto& e : now_rows) {
      if (listed_rows.count(e.name)) continue;
      if (starts_with(e.name, kRunsPrefix)) {
        BERTH_TRY(Run r, read_run(s, e));
        BERTH_CHECK(reach_run(s, r, fresh));
      }
    }
    for (const auto& e : now_rows) {
      if (starts_with(e.name, kStepsPrefix) && (!listed_rows.count(e.name) || fresh.rows.count(e.name))) {
        fresh.rows.insert(e.name);
        BERTH_CHECK(reach_step_row(s, e.name, fresh));
      }
    }
    BERTH_CHECK(fresh.expand(s));
    return fresh;
  };
  auto spare_rows = [&]() -> Result<std::set<std::string>> {
    BERTH_TRY(Reach fresh, newly_reached());
    return fresh.rows;
  };
  auto spare_objects = [&]() -> Result<std::set<std::string>> {
    BERTH_TRY(Reach fresh, newly_reached());
    return fresh.objects;
  };
  auto none = []() -> Result<std::set<std::string>> { return std::set<std::string>{}; };

  // 6. Delete: reports, step rows, lease rows — every row before the objects it
  // names — then the objects, then debris.
  std::vector<std::string> run_names;
  for (const Run* r : doomed_runs) run_names.push_back(r->address);
  BERTH_TRY(auto gone_runs, s.collect(store::EntryKind::kRow, run_names, cutoff, none));
  record("run", gone_runs, "");
  BERTH_TRY(auto gone_steps, s.collect(store::EntryKind::kRow, doomed_steps, cutoff, spare_rows));
  record("step row", gone_steps, "");
  BERTH_TRY(auto gone_leases, s.collect(store::EntryKind::kRow, doomed_leases, cutoff, none));
  record("lease row", gone_leases, "");
  BERTH_TRY(auto gone_objects,
            s.collect(store::EntryKind::kObject, doomed_objects, cutoff, spare_objects));
  record("object", gone_objects, "");
  BERTH_TRY(auto gone_debris, s.collect(store::EntryKind::kDebris, doomed_debris, cutoff, none));
  record("debris", gone_debris, "debris:");
  return rep;
}

}  // namespace berth::pipeline
