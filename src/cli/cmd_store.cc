// berth store: the store inspected by hand (spec 05): put, get, verify, cat; and
// collected (gc, spec 05 §10).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/read_back.h"
#include "cli/store_url.h"
#include "pipeline/collect.h"
#include "pipeline/command.h"
#include "pipeline/store_verify.h"
#include "pipeline/worker.h"
#include "store/object_store.h"

namespace berth::cli {
namespace {

struct StoreFlags {
  std::string url;       // --store; empty: the pipeline's store
  std::string pipeline;  // --pipeline (gc: its argument); empty: pipeline.toml here
  std::vector<std::string> args;
  std::string out;
  // gc
  size_t keep_runs = 5;
  std::vector<std::string> pipelines;  // gc --pipeline: whose runs to keep
  std::string grace = "7d";
  bool dry_run = false;
};

std::string bytes_text(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1u << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(n) / 1024);
  if (n < (1u << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
  return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1 << 30));
}

// The store a verb works on: --store, else the one `berth run PIPELINE` uses unless told
// otherwise (file://<dir>/.berth/store beside the pipeline; pipeline.toml here when none
// is named). A store chosen for the user is named on standard error, so that nobody
// inspects one store believing it is another.
Result<std::string> chosen_store(const StoreFlags& f) {
  if (!f.url.empty() && !f.pipeline.empty()) {
    return fail(Errc::kInvalidInput,
                fmt::format("give --store or a pipeline ({}), not both: a pipeline names the "
                            "store `berth run` uses for it",
                            f.pipeline));
  }
  if (!f.url.empty()) return f.url;
  const std::string pipeline = f.pipeline.empty() ? "pipeline.toml" : f.pipeline;
  std::string url = pipeline_store_url(pipeline);
  std::fprintf(stderr, "berth: store %s (the one `berth run %s` uses)\n", url.c_str(),
               pipeline::shell_quote(pipeline).c_str());
  return url;
}

// berth store gc (spec 05 §10): what nothing kept reaches, older than the grace period.
int run_gc(store::ObjectStore& store, const StoreFlags& f) {
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
  auto url = chosen_store(f);
  if (!url.ok()) return report(url.error().with_context("berth store " + verb));
  auto store = open_store_url(*url, verb == "put" ? StoreAbsent::kCreate : StoreAbsent::kRefuse);
  if (!store.ok()) return report(store.error().with_context(f.url.empty() ? "store" : "--store"));
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
  // verify: every named object, or every object a step row names (pipeline/store_verify.h).
  auto checked = pipeline::verify_store(**store, f.args);
  if (!checked.ok()) return report(checked.error());
  for (const auto& o : checked->objects) {
    std::printf("%s  %s\n", o.ok ? "ok     " : "corrupt", o.name.c_str());
  }
  std::printf("%zu object(s) verified, %zu bad\n", checked->objects.size(), checked->bad());
  return checked->bad() ? kExitFailure : kExitOk;
}

}  // namespace

// Each verb: its description and what its arguments are (gc's is the pipeline whose
// store it collects; the others name that pipeline with --pipeline, their arguments
// being files, objects or a row).
struct StoreVerb {
  const char* name;
  const char* description;
  const char* positional;  // its arguments' name
  const char* help;        // and what they are
};
constexpr StoreVerb kStoreVerbs[] = {
    {"put", "Store files as objects and print each one's name", "files", "Files to store"},
    {"get", "Write an object to standard output (or -o FILE), its bytes verified first",
     "name", "The object (sha256:HEX)"},
    {"verify",
     "Verify the named objects, or every object a step row names; exit 1 if any is bad",
     "names", "Objects to verify (none: every object the store's step rows name)"},
    {"cat", "Print the row at an address, such as rows/v1/steps/KEY", "address",
     "The row's address (rows/v1/...)"},
    {"gc",
     "Delete what the last runs do not reach and nothing used lately (spec 05 §10); "
     "--dry-run says what, writing nothing",
     "pipeline", "Collect this pipeline's store (default: pipeline.toml's here)"},
};

std::function<int()> setup_store(CLI::App& app) {
  auto f = std::make_shared<StoreFlags>();
  app.require_subcommand(1);
  auto chosen = std::make_shared<std::string>();
  for (const StoreVerb& verb : kStoreVerbs) {
    CLI::App* sub = app.add_subcommand(verb.name, verb.description);
    sub->add_option("--store", f->url,
                    "Store URL (default: the one `berth run` uses for the pipeline)");
    std::string v = verb.name;
    if (v == "gc") {
      sub->add_option(verb.positional, f->pipeline, verb.help);
      sub->add_option("--keep-runs", f->keep_runs,
                      "Keep what the last N runs reach (and the last N of each --pipeline)")
          ->capture_default_str()
          ->check(CLI::Range(size_t{0}, size_t{1} << 30));
      sub->add_option("--pipeline", f->pipelines,
                      "Also keep what the last --keep-runs runs of pipeline NAME reach");
      sub->add_option("--grace", f->grace,
                      "Delete only what was not written or used for this long (0: no grace)")
          ->capture_default_str();
      sub->add_flag("--dry-run", f->dry_run,
                    "Say what would be deleted, and how many bytes; write nothing");
    } else {
      sub->add_option(verb.positional, f->args, verb.help);
      sub->add_option("--pipeline", f->pipeline,
                      "Use the store `berth run PIPELINE` uses (default: pipeline.toml here)");
    }
    if (v == "get") sub->add_option("-o,--out", f->out, "Write to FILE");
    const char* name = verb.name;
    sub->callback([chosen, name] { *chosen = name; });
  }
  return [f, chosen] { return run_store(*chosen, *f); };
}

}  // namespace berth::cli
