// berth machine: what berth knows about this machine and node (spec 02 §5).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "alloc/hostlist.h"
#include "cli/commands.h"
#include "cli/context.h"
#include "cli/exit.h"
#include "place/placement.h"
#include "place/render.h"
#include "topo/gpus.h"
#include "util/idset.h"
#include "util/strings.h"

namespace berth::cli {
namespace {

struct Flags {
  AllocFlags alloc;
  MachineFlags machine;
  std::string format = "text";
};

nlohmann::ordered_json to_json(const Context& c) {
  using nlohmann::ordered_json;
  const auto& m = *c.machine;
  ordered_json j;
  j["version"] = 1;
  j["machine"] = m.name;
  j["machine_reason"] = c.machine_reason;
  j["description"] = m.description;
  ordered_json l;
  l["kind"] = topo::launcher_kind_name(c.launcher.kind);
  l["program"] = c.launcher.program;
  l["version"] = c.launcher.version
                     ? ordered_json(fmt::format("{}.{:02}", c.launcher.version->major,
                                                c.launcher.version->minor))
                     : ordered_json(nullptr);
  l["version_text"] = c.launcher.version_text;
  l["detected_by"] = c.launcher.detected_by;
  l["chosen_because"] = c.launcher_reason;
  l["mpi_plugins"] =
      c.launcher.mpi_plugins ? ordered_json(*c.launcher.mpi_plugins) : ordered_json(nullptr);
  if (!c.launcher.mpi_text.empty()) l["mpi_detected_by"] = c.launcher.mpi_text;
  j["launcher"] = l;
  j["cores_per_node"] = c.node.configured_cores ? ordered_json(*c.node.configured_cores)
                                                : ordered_json(c.node.usable_core_ids.size());
  j["cores_provenance"] = m.cores_per_node.value ? m.cores_per_node.provenance
                                                 : "detected: " + c.node.cores_provenance;
  j["usable_core_ids"] = c.node.usable_core_ids;
  j["usable_core_list"] = idset::encode_ids(c.node.usable_core_ids);
  j["core_basis"] = topo::core_basis_name(c.node.core_basis);
  j["threads_per_core"] = c.node.threads_per_core;
  ordered_json g;
  g["count"] = c.node.gpus.count();
  g["ids"] = c.node.gpus.ids;
  g["vendor"] = topo::gpu_vendor_name(c.node.gpus.vendor);
  g["provenance"] = c.node.gpus.provenance;
  g["per_node_configured"] = m.gpus_per_node.value ? ordered_json(*m.gpus_per_node.value)
                                                   : ordered_json(nullptr);
  j["gpus"] = g;
  auto mem = c.memory_per_node_mb();
  j["memory_per_node_mb"] = mem ? ordered_json(*mem) : ordered_json(nullptr);
  j["memory_provenance"] = c.memory_provenance();
  j["node_memory_mb"] = c.node.memory.mb ? ordered_json(*c.node.memory.mb) : ordered_json(nullptr);
  j["node_memory_provenance"] = c.node.memory.provenance;
  std::vector<std::string> names;
  for (const auto* n : c.allocation.up_nodes()) names.push_back(n->name);
  j["allocation_owner"] = c.allocation.owner;
  j["node_count"] = names.size();
  j["nodes"] = names;
  j["memory_total_mb"] = mem ? ordered_json(*mem * static_cast<int64_t>(names.size()))
                             : ordered_json(nullptr);
  j["placement_support"] = place::mechanism_name(place::placement_support(c.launcher));
  std::string why = place::placement_refusal(c.launcher);
  if (!why.empty()) j["placement_refusal"] = why;
  j["memory_cap_support"] = place::cap_support_name(place::memory_cap_support(c.launcher));
  // The wire-up an MPI launch of several tasks gets here: what the renderer asks of
  // this launcher for one (spec 07 §4).
  place::LaunchSpec probe;
  probe.tasks = 2;
  probe.command = {"mpi-program"};
  auto rendered = place::render(m, c.launcher, std::nullopt, probe);
  ordered_json w;
  if (rendered.ok()) {
    w["by"] = rendered->wireup.empty() ? ordered_json(nullptr) : ordered_json(rendered->wireup);
    std::vector<std::string> notes;
    for (const auto& n : rendered->notes) {
      if (n.find("--mpi") != std::string::npos) notes.push_back(n);
    }
    w["notes"] = notes;
  } else {
    w["by"] = nullptr;
    w["notes"] = std::vector<std::string>{rendered.error().message()};
  }
  j["mpi_wireup"] = w;
  j["diagnostics"] = c.node.diagnostics;
  return j;
}

int run_machine(const Flags& f) {
  auto c = build_context(f.alloc, f.machine);
  if (!c.ok()) return report(c.error());
  auto j = to_json(*c);
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
