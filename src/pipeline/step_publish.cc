// Publishing a step's result (step_publish.h).
#include "pipeline/step_publish.h"

#include <fmt/format.h>

#include "pipeline/command.h"
#include "pipeline/dir_output.h"
#include "place/pool.h"

namespace berth::pipeline {

using json = nlohmann::ordered_json;

namespace {

// Which GPUs a step ran on, as their driver names them (spec 04 §8).
json gpu_devices(const place::Placement& p) {
  json devices = json::array();
  for (size_t g = 0; g < p.gpu_ids.size(); ++g) {
    json gpu;
    gpu["id"] = p.gpu_ids[g];
    if (g < p.gpu_devices.size()) {
      const auto& dev = p.gpu_devices[g];
      if (!dev.model.empty()) gpu["model"] = dev.model;
      if (!dev.uuid.empty()) gpu["uuid"] = dev.uuid;
      if (!dev.bus.empty()) gpu["bus"] = dev.bus;
      if (!dev.driver.empty()) gpu["driver"] = dev.driver;
    }
    devices.push_back(std::move(gpu));
  }
  return devices;
}

}  // namespace

json step_provenance(const Step& s, const StepRecord& r, const place::Placement& p, json inputs,
                     const ProvenanceContext& c) {
  json prov;
  prov["command"] = describe_command(s);
  prov["inputs"] = std::move(inputs);
  prov["params"] = json::object();
  for (const auto& [k, v] : s.params()) prov["params"][k] = v.text;
  prov["tools"] = json::object();
  for (const auto& tool : s.tools) {
    prov["tools"][tool] = c.tools && c.tools->count(tool) ? c.tools->at(tool) : "";
  }
  prov["engine_version"] = c.engine_version;
  prov["platform"] = c.platform;
  prov["host"] = r.node;
  prov["cores"] = r.cores;
  prov["gpus"] = p.gpus;
  // A share of one device is a device it did not have to itself.
  if (s.gpu_share > 0) prov["gpu_share"] = place::gpu_share_text(s.gpu_share);
  if (!p.gpu_ids.empty()) prov["gpu_devices"] = gpu_devices(p);
  prov["tasks"] = s.tasks;
  if (!c.worker.empty()) prov["worker"] = c.worker;
  prov["start"] = c.start;
  prov["end"] = c.end;
  prov["elapsed_s"] = r.end_s - r.start_s;
  return prov;
}

std::string step_row_text(const std::string& key, const std::string& step, const json& outputs,
                          const std::string& log, const json& provenance) {
  json row;
  row["version"] = 1;
  row["key"] = key;
  row["step"] = step;
  row["outputs"] = outputs;
  if (!log.empty()) row["log"] = log;
  row["provenance"] = provenance;
  return row.dump();
}

std::string computed_by(const json& prov) {
  for (const char* k : {"worker", "host"}) {
    if (prov.contains(k) && prov[k].is_string() && !prov[k].get<std::string>().empty()) {
      return prov[k].get<std::string>();
    }
  }
  return "";
}

Result<store::RowPut> put_step_row(store::ObjectStore& rows, const std::string& address,
                                   const std::string& row) {
  auto put = rows.put_row(address, row);
  for (int again = 0; again < 2 && put.ok() && !put->created; ++again) {
    auto there = rows.touch_row(address);
    if (!there.ok() || *there) break;
    put = rows.put_row(address, row);
  }
  return put;
}

void adopt_winner(const std::string& theirs_text, const std::string& step, const std::string& key,
                  StepResult& d) {
  // The winner's row carries its outputs' canonical hashes, so this worker learns
  // without another read whether the winner meant the same (spec 06).
  json theirs = json::parse(theirs_text, nullptr, false);
  bool readable = !theirs.is_discarded() && theirs.is_object() && theirs.contains("outputs") &&
                  theirs["outputs"].is_object();
  for (auto& [out, rec] : d.record.outputs) {
    const json* o = readable && theirs["outputs"].contains(out) ? &theirs["outputs"][out] : nullptr;
    std::string other = o && o->is_object() ? o->value("canonical", "") : "";
    std::string object = o && o->is_object() ? o->value("object", "") : "";
    if (other != rec.canonical) d.divergences.push_back({step, key, out, rec.canonical, other});
    if (store::check_object_name(object).ok()) rec.object = object;
  }
  if (readable && theirs.contains("provenance") && theirs["provenance"].is_object()) {
    d.record.computed_by = computed_by(theirs["provenance"]);
  }
}

void make_sure_of_objects(store::ObjectStore& objects,
                          const std::map<std::string, std::string>& files, const std::string& step,
                          StepResult& d) {
  // The one move a collector on a store without rename can race is the deletion of an
  // object just refreshed (spec 05 §10).
  for (const auto& [out, rec] : d.record.outputs) {
    auto file = files.find(out);
    const std::string path = file == files.end() ? std::string() : file->second;
    if (is_tree(rec)) {
      auto restored = restore_tree(objects, rec.object, path);
      if (!restored.ok()) {
        d.problems.push_back(fmt::format("step '{}': {}", step, restored.error().message()));
      }
      continue;
    }
    auto there = objects.has_object(rec.object);
    if (there.ok() && !*there) (void)objects.put_object_file(path);
  }
}

}  // namespace berth::pipeline
