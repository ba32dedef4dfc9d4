// berth store: the store inspected by hand (spec 05): put, get, verify, cat.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit.h"
#include "cli/store_url.h"
#include "store/object_store.h"

namespace berth::cli {
namespace {

struct StoreFlags {
  std::string url = "file://.berth/store";
  std::vector<std::string> args;
  std::string out;
};

int run_store(const std::string& verb, const StoreFlags& f) {
  auto store = open_store_url(f.url);
  if (!store.ok()) return report(store.error().with_context("--store"));
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
  // verify: every named object, or every object a step row names.
  std::vector<std::string> names = f.args;
  if (names.empty()) {
    auto rows = (*store)->list_rows(
        store::row_address("steps", "").substr(0, store::row_address("steps", "").size()));
    if (rows.ok()) {
      for (const auto& a : *rows) {
        auto row = (*store)->get_row(a);
        if (!row.ok() || !row->has_value()) continue;
        auto j = nlohmann::json::parse(**row, nullptr, false);
        if (j.is_discarded() || !j.contains("outputs")) continue;
        for (auto& [k, v] : j["outputs"].items()) names.push_back(v.value("object", ""));
      }
    }
  }
  int bad = 0;
  for (const auto& n : names) {
    auto got = (*store)->get_object(n);
    bool ok = got.ok() && got->present();
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
  for (const char* verb : {"put", "get", "verify", "cat"}) {
    CLI::App* sub = app.add_subcommand(verb, std::string("store ") + verb);
    sub->add_option("--store", f->url, "Store URL")->capture_default_str();
    sub->add_option("args", f->args, "Files (put), object names (get, verify), a row (cat)");
    if (std::string(verb) == "get") sub->add_option("-o,--out", f->out, "Write to FILE");
    sub->callback([chosen, verb] { *chosen = verb; });
  }
  return [f, chosen] { return run_store(*chosen, *f); };
}

}  // namespace berth::cli
