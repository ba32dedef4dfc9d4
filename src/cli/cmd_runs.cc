// berth runs: a pipeline's earlier runs, as the store keeps them (spec 04 §8.1) — when
// each started, where it ran, which worker, what it did and how long it took.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/last_run.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

using json = nlohmann::json;

struct RunsFlags {
  std::string pipeline = "pipeline.toml";
  std::string store;
  std::string format = "text";
};

// Where a run ran: its host and, when its steps ran elsewhere too, those nodes.
std::string where(const json& head) {
  std::string host = head.value("host", "");
  std::vector<std::string> nodes;
  if (head.contains("nodes") && head["nodes"].is_array()) {
    for (const auto& n : head["nodes"]) {
      if (n.is_string() && n.get<std::string>() != host) nodes.push_back(n.get<std::string>());
    }
  }
  if (host.empty()) host = "-";
  if (nodes.empty()) return host;
  return fmt::format("{} (steps on {})", host, str::join(nodes, ","));
}

// What a run did, in a few words: its counts, and what kind of run it was.
std::string what(const json& head) {
  std::string out = fmt::format("{} executed, {} cached", head.value("executed", 0),
                                head.value("cached", 0));
  for (const char* k : {"failed", "skipped", "refused", "cancelled"}) {
    if (int n = head.value(k, 0); n > 0) out += fmt::format(", {} {}", n, k);
  }
  if (head.value("settled", false)) out += " (settled)";
  if (head.contains("targets") && head["targets"].is_array()) {
    std::vector<std::string> t;
    for (const auto& x : head["targets"]) {
      if (x.is_string()) t.push_back(x.get<std::string>());
    }
    out += " (targets: " + str::join(t, " ") + ")";
  }
  return out;
}

int run_runs(const RunsFlags& f) {
  auto h = open_history(f.store, f.pipeline);
  if (!h.ok()) return report(h.error().with_context("berth runs"));
  if (f.format == "json") {
    json out = json::array();
    for (const auto& r : h->runs) {
      json row = r.head;
      row["id"] = r.id;
      row.erase("steps_object");
      row.erase("steps_changed");
      out.push_back(std::move(row));
    }
    std::string text = out.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  if (h->runs.empty()) {
    std::string text = fmt::format("{} has no run kept in {}{}\n", f.pipeline, h->store->describe(),
                                   h->last.is_null() ? " (it has not run here yet)" : "");
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  std::string out = fmt::format("{:<40} {:>9}  {:<10} {:<24} {}\n", "run", "wall", "worker",
                                "where", "steps");
  for (const auto& r : h->runs) {
    std::string worker = r.head.value("worker", "");
    out += fmt::format("{:<40} {:>7.2f} s  {:<10} {:<24} {}\n", r.id,
                       r.head.value("elapsed_s", 0.0), worker.empty() ? "-" : worker,
                       where(r.head), what(r.head));
  }
  out += fmt::format("{} run(s) of {} in {}; `berth report {} --run ID` shows one\n",
                     h->runs.size(), f.pipeline, h->store->describe(), f.pipeline);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

std::function<int()> setup_runs(CLI::App& app) {
  auto f = std::make_shared<RunsFlags>();
  app.add_option("pipeline", f->pipeline, "The pipeline file whose runs are listed")
      ->capture_default_str();
  app.add_option("--store", f->store,
                 "Store URL the runs are read from (default: the one the last run used)");
  app.add_option("--format", f->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return [f] { return run_runs(*f); };
}

}  // namespace berth::cli
