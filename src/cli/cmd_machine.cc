// berth machine: what berth knows about this machine and node (spec 02 §5).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "alloc/hostlist.h"
#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "place/context.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

struct Flags {
  AllocFlags alloc;
  MachineFlags machine;
  std::string format = "text";
};

int run_machine(const Flags& f) {
  auto c = build_context(f.alloc, f.machine);
  if (!c.ok()) return report(c.error());
  auto j = place::machine_json(*c);
  std::string out;
  if (f.format == "json") {
    out = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else {
    auto val = [](const nlohmann::ordered_json& v) {
      return v.is_string() ? v.get<std::string>() : v.dump();
    };
    out += fmt::format("machine:            {} ({})\n", val(j["machine"]), val(j["machine_reason"]));
    out += fmt::format("launcher:           {} {} [{}]\n", val(j["launcher"]["kind"]),
                       val(j["launcher"]["version_text"]), val(j["launcher"]["chosen_because"]));
    out += fmt::format("cores per node:     {} ({})\n", val(j["cores_per_node"]),
                       val(j["cores_provenance"]));
    out += fmt::format("usable core ids:    {} ({})\n", val(j["usable_core_list"]),
                       val(j["core_basis"]));
    out += fmt::format("threads per core:   {}\n", val(j["threads_per_core"]));
    out += fmt::format("gpus:               {} {} ({})\n", val(j["gpus"]["count"]),
                       str::join(c->node.gpus.ids, ","), val(j["gpus"]["provenance"]));
    for (const auto& d : j["gpus"]["devices"]) {
      std::string where = d["local_cores"].get<std::string>().empty()
                              ? std::string()
                              : "  cores " + d["local_cores"].get<std::string>();
      if (!d["numa_node"].is_null()) where += "  numa " + val(d["numa_node"]);
      out += fmt::format("  gpu {}:{}           {}  {}  {}{}\n", val(d["id"]),
                         d["usable"].get<bool>() ? "" : " (not usable)",
                         d["model"].is_null() ? "(model unknown)" : val(d["model"]),
                         d["uuid"].is_null() ? "(no uuid)" : val(d["uuid"]),
                         d["bus"].is_null() ? "(bus unknown)" : val(d["bus"]), where);
    }
    out += fmt::format("memory per node:    {} MB ({})\n", val(j["memory_per_node_mb"]),
                       val(j["memory_provenance"]));
    std::vector<std::string> names = j["nodes"].get<std::vector<std::string>>();
    out += fmt::format("nodes:              {} ({}, {})\n", names.size(),
                       alloc::hostlist::compress(names), val(j["allocation_owner"]));
    out += fmt::format("placement support:  {}\n", val(j["placement_support"]));
    if (j.contains("placement_refusal")) {
      out += fmt::format("  because:          {}\n", val(j["placement_refusal"]));
    }
    out += fmt::format("memory cap support: {}\n", val(j["memory_cap_support"]));
    out += fmt::format("mpi wire-up:        {}\n", j["mpi_wireup"]["by"].is_null()
                                                       ? std::string("none")
                                                       : val(j["mpi_wireup"]["by"]));
    for (const auto& n : j["mpi_wireup"]["notes"])
      out += fmt::format("  because:          {}\n", val(n));
    for (const auto& d : c->node.diagnostics) out += "note: " + d + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

}  // namespace

std::function<int()> setup_machine(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  app.add_option("--format", f->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  add_machine_flags(app, f->machine);
  add_alloc_flags(app, f->alloc);
  return [f] { return run_machine(*f); };
}

}  // namespace berth::cli
