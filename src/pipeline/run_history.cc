// A pipeline's history, read from the runs rows (run_history.h).
#include "pipeline/run_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "pipeline/report.h"
#include "pipeline/report_file.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::json;

const std::string kRunsPrefix = store::row_address("runs", "");

// `text` as a JSON value of the kind wanted, or discarded: reports are berth's own,
// but a store is shared and a row may be anything.
json parse_report_part(const std::string& text) {
  if (str::json_deeper_than(text, kMaxReportDepth)) return json(json::value_t::discarded);
  return json::parse(text, nullptr, false);
}

bool counts(const json& entry) {
  return entry.is_object() && entry.contains("name") && entry["name"].is_string();
}

// Whether a row's head has, for each field a report has, the type a report gives it: a
// row that does not is no report of berth's, and is left out of the history.
bool well_typed(const json& h) {
  for (const char* k : {"started", "run", "pipeline", "pipeline_path", "host", "worker",
                        "store", "steps_object"}) {
    if (h.contains(k) && !h[k].is_string()) return false;
  }
  for (const char* k : {"executed", "cached", "failed", "skipped", "refused", "cancelled",
                        "would_run", "elapsed_s"}) {
    if (h.contains(k) && !h[k].is_number()) return false;
  }
  for (const char* k : {"nodes", "targets", "steps", "steps_changed"}) {
    if (h.contains(k) && !h[k].is_array()) return false;
  }
  return !h.contains("settled") || h["settled"].is_boolean();
}

}  // namespace

std::string report_text(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

double report_number(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

bool report_flag(const json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::string run_id(std::string_view started, std::string_view worker, std::string_view process) {
  return fmt::format("{}-{}{}", started, worker.empty() ? "" : std::string(worker) + "-", process);
}

std::string store_url_of(const json& report) {
  if (!report.contains("store") || !report["store"].is_string()) return "";
  std::string s = report["store"].get<std::string>();
  // A worker's store is its local tier in front of the shared one: the shared one
  // holds everything the run stored.
  if (size_t at = s.find("shared="); s.rfind("tiered(", 0) == 0 && at != std::string::npos) {
    s = s.substr(at + 7);
    if (!s.empty() && s.back() == ')') s.pop_back();
  }
  if (size_t sp = s.find(' '); sp != std::string::npos) s.resize(sp);  // " (endpoint)"
  return s;
}

std::string run_store_url(const std::string& url, const json& report,
                          const std::string& pipeline_path) {
  if (!url.empty()) return url;
  if (std::string named = store_url_of(report); !named.empty()) return named;
  return "file://" + berth_dir_for(pipeline_path) + "/store";
}

bool same_pipeline(const json& head, const std::string& pipeline_path) {
  namespace fs = std::filesystem;
  std::string mine = fs::absolute(pipeline_path).lexically_normal().string();
  if (head.contains("pipeline_path") && head["pipeline_path"].is_string()) {
    return head["pipeline_path"].get<std::string>() == mine;
  }
  if (!head.contains("pipeline") || !head["pipeline"].is_string()) return false;
  return fs::path(head["pipeline"].get<std::string>()).filename() == fs::path(mine).filename();
}

Result<std::vector<RunEntry>> list_runs(store::ObjectStore& store,
                                        const std::string& pipeline_path) {
  // With each row's time where the store lists them so; by name alone where it cannot.
  auto entries = store.list_row_entries(kRunsPrefix);
  if (!entries.ok() && entries.error().code() == Errc::kUnsupported) {
    BERTH_TRY(std::vector<std::string> names, store.list_rows(kRunsPrefix));
    entries = std::vector<store::StoreEntry>{};
    for (auto& n : names) entries->push_back(store::StoreEntry{std::move(n)});
  }
  BERTH_TRY(std::vector<store::StoreEntry> rows, std::move(entries));
  std::vector<std::pair<RunEntry, int64_t>> found;
  for (const auto& row : rows) {
    const std::string& address = row.name;
    if (!std::string_view(address).starts_with(kRunsPrefix)) continue;
    BERTH_TRY(std::optional<std::string> text, store.get_row(address));
    if (!text) continue;  // collected since it was listed
    json head = parse_report_part(*text);
    if (!head.is_object() || !well_typed(head) || !same_pipeline(head, pipeline_path)) continue;
    found.push_back({{address.substr(kRunsPrefix.size()), std::move(head)}, row.time_ms});
  }
  // Newest first: by when each started (to the second), then by when its row was
  // written (a run's row is written as it ends), then by id.
  auto order = [](const std::pair<RunEntry, int64_t>& r) {
    return std::make_tuple(r.first.head.value("started", ""), r.second, r.first.id);
  };
  std::sort(found.begin(), found.end(),
            [&](const auto& a, const auto& b) { return order(a) > order(b); });
  std::vector<RunEntry> out;
  out.reserve(found.size());
  for (auto& [run, t] : found) out.push_back(std::move(run));
  return out;
}

Result<const RunEntry*> find_run(const std::vector<RunEntry>& runs, const std::string& which) {
  const RunEntry* found = nullptr;
  size_t matches = 0;
  for (const auto& r : runs) {
    if (r.id == which) return &r;
    if (std::string_view(r.id).starts_with(which)) {
      found = &r;
      ++matches;
    }
  }
  if (matches == 1) return found;
  if (matches > 1) {
    return fail(Errc::kInvalidInput,
                fmt::format("--run {}: {} runs start so; give more of the id (berth runs "
                            "lists them)",
                            which, matches));
  }
  return fail(Errc::kNotFound,
              fmt::format("--run {}: no such run of this pipeline in the store ({} kept; "
                          "berth runs lists them)",
                          which, runs.size()));
}

Result<json> read_run(store::ObjectStore& store, const RunEntry& run) {
  json report = run.head;
  std::string object = report_text(report, "steps_object");
  json steps = json::array();
  if (!object.empty()) {
    BERTH_TRY(store::ObjectRead got, store.get_object(object));
    if (!got.present()) {
      return fail(Errc::kNotFound,
                  fmt::format("run {}: its steps ({}) are not in the store{}", run.id, object,
                              got.problem.empty() ? "" : ": " + got.problem));
    }
    steps = parse_report_part(got.bytes);
    if (!steps.is_array()) {
      return fail(Errc::kInvalidInput, fmt::format("run {}: its steps ({}) are not a list of "
                                                   "steps",
                                                   run.id, object));
    }
  } else if (report.contains("steps") && report["steps"].is_array()) {
    steps = report["steps"];
  }
  if (report.contains("steps_changed") && report["steps_changed"].is_array()) {
    std::map<std::string, const json*> changed;
    for (const auto& e : report["steps_changed"]) {
      if (counts(e)) changed[report_text(e, "name")] = &e;
    }
    for (auto& e : steps) {
      if (!counts(e)) continue;
      if (auto it = changed.find(report_text(e, "name")); it != changed.end()) e = *it->second;
    }
  }
  report.erase("steps_object");
  report.erase("steps_changed");
  report["steps"] = std::move(steps);
  return report;
}

namespace {
// Where the runs before `report` begin among `runs` (newest first): after the report's
// own row; for a report without an id, at the first run that started before it.
size_t first_older(const std::vector<RunEntry>& runs, const json& report) {
  std::string id = report_text(report, "run");
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!id.empty() && runs[i].id == id) return i + 1;
  }
  std::string started = report_text(report, "started");
  for (size_t i = 0; i < runs.size(); ++i) {
    if (report_text(runs[i].head, "started") < started) return i;
  }
  return runs.size();
}
}  // namespace

std::vector<json> whole_pipeline_steps(store::ObjectStore& store, const json& report,
                                       const std::vector<RunEntry>& earlier) {
  std::vector<json> out;
  std::set<std::string> have;
  auto take = [&](const json& steps) {
    if (!steps.is_array()) return;
    for (const auto& e : steps) {
      if (counts(e) && have.insert(report_text(e, "name")).second) out.push_back(e);
    }
  };
  take(report.contains("steps") ? report["steps"] : json::array());
  bool whole = !report.contains("targets");
  // Only runs before the report's: a run since then answers for itself.
  for (size_t i = first_older(earlier, report); i < earlier.size() && !whole; ++i) {
    const RunEntry& run = earlier[i];
    auto r = read_run(store, run);
    if (!r.ok()) continue;
    take((*r)["steps"]);
    whole = !run.head.contains("targets");
  }
  return out;
}

std::map<std::string, Computed> computing_runs(store::ObjectStore& store, const json& report,
                                               const std::vector<RunEntry>& earlier) {
  std::set<std::string> wanted;
  for (const auto& e : report.contains("steps") && report["steps"].is_array() ? report["steps"] : json::array()) {
    if (counts(e) && report_text(e, "state") == "cached" && !report_text(e, "key").empty()) {
      wanted.insert(report_text(e, "key"));
    }
  }
  std::map<std::string, Computed> out;
  for (size_t i = first_older(earlier, report); i < earlier.size() && !wanted.empty(); ++i) {
    const RunEntry& run = earlier[i];
    if (report_number(run.head, "executed") == 0) continue;
    auto r = read_run(store, run);
    if (!r.ok()) continue;
    for (const auto& e : (*r)["steps"]) {
      if (!counts(e) || report_text(e, "state") != "executed") continue;
      auto it = wanted.find(report_text(e, "key"));
      if (it == wanted.end()) continue;
      out[*it] = Computed{&run, e};
      wanted.erase(it);
    }
  }
  return out;
}

}  // namespace berth::pipeline
