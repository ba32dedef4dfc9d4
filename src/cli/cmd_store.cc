// berth store: the store inspected by hand (spec 05): put, get, verify, cat; and
// collected (gc, spec 05 §10).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/store_url.h"
#include "pipeline/collect.h"
#include "pipeline/worker.h"
#include "store/object_store.h"
#include "store/tree.h"

namespace berth::cli {
namespace {

struct StoreFlags {
  std::string url = "file://.berth/store";
  std::vector<std::string> args;
  std::string out;
  // gc
  size_t keep_runs = 5;
  std::vector<std::string> pipelines;
  std::string grace = "7d";
  bool dry_run = false;
};

std::string bytes_text(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1u << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(n) / 1024);
  if (n < (1u << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
  return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1 << 30));
}

// berth store gc (spec 05 §10): what nothing kept reaches, older than the grace period.
int run_gc(store::ObjectStore& store, const StoreFlags& f) {
  if (!f.args.empty()) {
    return report(Error(Errc::kInvalidInput, "berth store gc takes no arguments: give --store"));
  }
  pipeline::CollectOptions o;
  o.keep_runs = f.keep_runs;
  o.pipelines = f.pipelines;
  o.dry_run = f.dry_run;
  if (f.grace == "0") {
    o.grace = std::chrono::milliseconds(0);
  } else {
    auto g = pipeline::parse_duration(f.grace, "--grace");
    if (!g.ok()) return report(g.error());
    o.grace = *g;
  }
  if (o.grace < 2 * store::kRefreshAfter) {
    std::fprintf(stderr,
                 "berth: warning: a grace period under %s is safe only while no run or worker "
                 "uses the store: a use refreshes an entry at most every %s (spec 05 §10)\n",
                 pipeline::duration_text(2 * store::kRefreshAfter).c_str(),
                 pipeline::duration_text(store::kRefreshAfter).c_str());
  }
  auto r = pipeline::collect_store(store, o);
  if (!r.ok()) return report(r.error());
  for (const auto& p : r->problems) std::fprintf(stderr, "berth: %s\n", p.c_str());
  const char* verb = f.dry_run ? "would delete" : "deleted";
  if (f.dry_run) {
    for (const auto& d : r->deleted) {
      std::printf("%-9s %s  %s\n", d.kind.c_str(), d.name.c_str(), bytes_text(d.bytes).c_str());
    }
  }
  std::printf("kept %zu of %zu run(s) and what they reach; %s %zu run(s), %zu step row(s), "
              "%zu lease row(s), %zu object(s), %zu debris: %s\n",
              r->runs_kept, r->runs, verb, r->count("run"), r->count("step row"),
              r->count("lease row"), r->count("object"), r->count("debris"),
              bytes_text(r->bytes()).c_str());
  return kExitOk;
}

int run_store(const std::string& verb, const StoreFlags& f) {
  auto store =
      open_store_url(f.url, verb == "put" ? StoreAbsent::kCreate : StoreAbsent::kRefuse);
  if (!store.ok()) return report(store.error().with_context("--store"));
  if (verb == "gc") return run_gc(**store, f);
  if (f.args.empty() && verb != "verify") {
    return report(
        Error(Errc::kInvalidInput, fmt::format("berth store {}: name what to {}", verb, verb)));
  }
  if (verb == "put") {
    for (const auto& p : f.args) {
      auto name = (*store)->put_object_file(p);
      if (!name.ok()) return report(name.error());
      std::printf("%s  %s\n", name->c_str(), p.c_str());
    }
    return kExitOk;
  }
  if (verb == "get") {
    auto got = f.out.empty() ? (*store)->get_object(f.args[0])
                             : (*store)->get_object_to_file(f.args[0], f.out);
    if (!got.ok()) return report(got.error());
    if (!got->present()) {
      return report(Error(Errc::kNotFound,
                          got->problem.empty() ? f.args[0] + ": not in the store" : got->problem));
    }
    if (f.out.empty()) std::fwrite(got->bytes.data(), 1, got->bytes.size(), stdout);
    return kExitOk;
  }
  if (verb == "cat") {
    auto row = (*store)->get_row(f.args[0]);
    if (!row.ok()) return report(row.error());
    if (!row->has_value()) return report(Error(Errc::kNotFound, f.args[0] + ": no such row"));
    std::printf("%s\n", (*row)->c_str());
    return kExitOk;
  }
  // verify: every named object, or every object a step row names — for a directory
  // output, its manifest and every file the manifest names (store/tree.h).
  std::vector<std::string> names = f.args;
  std::set<std::string> trees;
  if (names.empty()) {
    auto rows = (*store)->list_rows(
        store::row_address("steps", "").substr(0, store::row_address("steps", "").size()));
    if (rows.ok()) {
      for (const auto& a : *rows) {
        auto row = (*store)->get_row(a);
        if (!row.ok() || !row->has_value()) continue;
        auto j = nlohmann::json::parse(**row, nullptr, false);
        if (j.is_discarded() || !j.contains("outputs")) continue;
        for (auto& [k, v] : j["outputs"].items()) {
          if (!v.is_object()) continue;
          names.push_back(v.value("object", ""));
          if (v.value("form", "") == "tree") trees.insert(names.back());
        }
      }
    }
  }
  int bad = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string n = names[i];
    bool ok = false;
    if (trees.count(n)) {
      std::vector<store::TreeEntry> entries;
      auto got = store::get_tree(**store, n, &entries);
      ok = got.ok() && got->present();
      if (ok) {
        for (std::string& child : store::tree_objects(entries)) names.push_back(std::move(child));
      }
    } else {
      auto got = (*store)->get_object(n);
      ok = got.ok() && got->present();
    }
    if (!ok) ++bad;
    std::printf("%s  %s\n", ok ? "ok     " : "corrupt", n.c_str());
  }
  std::printf("%zu object(s) verified, %d bad\n", names.size(), bad);
  return bad ? kExitFailure : kExitOk;
}

}  // namespace

std::function<int()> setup_store(CLI::App& app) {
  auto f = std::make_shared<StoreFlags>();
  app.require_subcommand(1);
  auto chosen = std::make_shared<std::string>();
  for (const char* verb : {"put", "get", "verify", "cat", "gc"}) {
    CLI::App* sub = app.add_subcommand(verb, std::string("store ") + verb);
    sub->add_option("--store", f->url, "Store URL")->capture_default_str();
    std::string v = verb;
    if (v == "gc") {
      sub->add_option("--keep-runs", f->keep_runs,
                      "Keep what the last N runs reach (and the last N of each --pipeline)")
          ->capture_default_str()
          ->check(CLI::Range(size_t{0}, size_t{1} << 30));
      sub->add_option("--pipeline", f->pipelines,
                      "Also keep what the last --keep-runs runs of pipeline NAME reach");
      sub->add_option("--grace", f->grace,
                      "Delete only what was not written or used for this long (0: no grace)")
          ->capture_default_str();
      sub->add_flag("--dry-run", f->dry_run, "Say what would be deleted, and how many bytes");
    } else {
      sub->add_option("args", f->args, "Files (put), object names (get, verify), a row (cat)");
    }
    if (v == "get") sub->add_option("-o,--out", f->out, "Write to FILE");
    sub->callback([chosen, verb] { *chosen = verb; });
  }
  return [f, chosen] { return run_store(*chosen, *f); };
}

}  // namespace berth::cli
