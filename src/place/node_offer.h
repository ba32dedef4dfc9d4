// NodeOffer: what one node has for a run's work, as that node itself reads it — its
// usable core ids, its GPUs with their identities, its usable memory (spec 08 §4).
//
// A run reads its own node; every other node's comes from the berth agent running
// there, in its hello, so that the pool places on what each node really has rather
// than on this node's description taken for all (spec 02 §4). The JSON is the wire's:
// an agent's hello carries it, and a malformed one is refused naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "topo/gpu_identity.h"
#include "util/result.h"

namespace berth::place {

struct NodeOffer {
  std::vector<int> cores;            // usable core ids (one CPU id per physical core)
  std::vector<std::string> gpu_ids;  // in gpu_variable's syntax
  std::string gpu_variable;          // CUDA_VISIBLE_DEVICES, ...; "" = none
  std::vector<topo::GpuIdentity> gpu_devices;  // aligned with gpu_ids
  std::optional<int64_t> memory_mb;  // usable memory; absent = not known
  std::string cores_provenance;      // where the core ids came from ("affinity", hwloc)
};

nlohmann::json offer_to_json(const NodeOffer& o);
// Fails (kInvalidInput) on a field of the wrong type or out of range, naming it.
Result<NodeOffer> offer_from_json(const nlohmann::json& j);

}  // namespace berth::place
