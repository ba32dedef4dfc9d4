// NodeOffer (node_offer.h).
#include "place/node_offer.h"

#include <fmt/format.h>

#include "util/idset.h"

namespace berth::place {
namespace {

using json = nlohmann::json;

Result<std::string> text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string();
  if (!it->is_string()) return fail(Errc::kInvalidInput, fmt::format("'{}' is not a string", key));
  return it->get<std::string>();
}

Result<std::vector<int>> core_ids(const json& j, const char* key) {
  BERTH_TRY(std::string ids, text(j, key));
  if (ids.empty()) return std::vector<int>{};
  auto decoded = idset::parse_ids(ids);
  if (!decoded.ok()) {
    return fail(Errc::kInvalidInput, fmt::format("'{}': {}", key, decoded.error().message()));
  }
  return *decoded;
}

Result<topo::GpuIdentity> identity_from_json(const json& d) {
  if (!d.is_object()) return fail(Errc::kInvalidInput, "a GPU device is not an object");
  topo::GpuIdentity g;
  BERTH_TRY(g.id, text(d, "id"));
  BERTH_TRY(g.uuid, text(d, "uuid"));
  BERTH_TRY(g.model, text(d, "model"));
  BERTH_TRY(g.bus, text(d, "bus"));
  BERTH_TRY(g.driver, text(d, "driver"));
  if (auto n = d.find("numa_node"); n != d.end()) {
    if (!n->is_number_integer() || n->get<int64_t>() < -1 || n->get<int64_t>() > 4096) {
      return fail(Errc::kInvalidInput, "'numa_node' is not a NUMA node");
    }
    g.numa_node = n->get<int>();
  }
  BERTH_TRY(g.local_cores, core_ids(d, "local_cores"));
  return g;
}

}  // namespace

json offer_to_json(const NodeOffer& o) {
  json devices = json::array();
  for (const auto& g : o.gpu_devices) {
    devices.push_back({{"id", g.id},
                       {"uuid", g.uuid},
                       {"model", g.model},
                       {"bus", g.bus},
                       {"driver", g.driver},
                       {"numa_node", g.numa_node},
                       {"local_cores", idset::encode_ids(g.local_cores)}});
  }
  json j = {{"cores", idset::encode_ids(o.cores)},
            {"gpu_ids", o.gpu_ids},
            {"gpu_variable", o.gpu_variable},
            {"gpu_devices", std::move(devices)},
            {"cores_provenance", o.cores_provenance}};
  j["memory_mb"] = o.memory_mb ? json(*o.memory_mb) : json(nullptr);
  return j;
}

Result<NodeOffer> offer_from_json(const json& j) {
  if (!j.is_object()) return fail(Errc::kInvalidInput, "a node's offer is not an object");
  NodeOffer o;
  BERTH_TRY(o.cores, core_ids(j, "cores"));
  if (auto g = j.find("gpu_ids"); g != j.end()) {
    if (!g->is_array()) return fail(Errc::kInvalidInput, "'gpu_ids' is not a list");
    for (const auto& id : *g) {
      if (!id.is_string()) return fail(Errc::kInvalidInput, "'gpu_ids' holds a non-string");
      o.gpu_ids.push_back(id.get<std::string>());
    }
  }
  BERTH_TRY(o.gpu_variable, text(j, "gpu_variable"));
  if (auto d = j.find("gpu_devices"); d != j.end()) {
    if (!d->is_array()) return fail(Errc::kInvalidInput, "'gpu_devices' is not a list");
    for (const auto& dev : *d) {
      BERTH_TRY(topo::GpuIdentity g, identity_from_json(dev));
      o.gpu_devices.push_back(std::move(g));
    }
  }
  if (auto m = j.find("memory_mb"); m != j.end() && !m->is_null()) {
    if (!m->is_number_integer() || m->get<int64_t>() < 0) {
      return fail(Errc::kInvalidInput, "'memory_mb' is not a count of MB");
    }
    o.memory_mb = m->get<int64_t>();
  }
  BERTH_TRY(o.cores_provenance, text(j, "cores_provenance"));
  return o;
}

}  // namespace berth::place
