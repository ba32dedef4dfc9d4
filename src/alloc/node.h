// What a source says about one node, and what the node table holds for it.
//
// A source (Slurm, PBS, a hostfile, ...) produces NodeSpecs; the NodeTable
// (node_table.h) turns them into Nodes: deduplicated, FQDN-normalised, merged with the
// local host, with indices that are never reused. spec 01 §3 pins how a Node is displayed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace berth::alloc {

struct NodeSpec {
  std::string name;                  // as the source wrote it: short, FQDN or IP address
  int64_t slots = 0;                 // usable slots on the node
  int64_t slots_max = 0;             // 0 = no maximum
  bool slots_given = false;          // true when `slots` is authoritative (spec 01 §4)
  std::vector<std::string> aliases;  // other names the source knows this node by
  std::string user;                  // hostfile `user@host`: the login to use; else empty
};

enum class NodeState {
  kUp,           // in the allocation and usable
  kNotIncluded,  // in the allocation, but filtered out (--host/--hostfile/^host)
};
const char* node_state_name(NodeState s);  // "up", "not-included"

struct Node {
  size_t index = 0;                  // node-table index; never reused
  std::string name;                  // short name (FQDN cut at the first dot; IPs kept whole)
  std::string rawname;               // the name exactly as the source gave it
  std::vector<std::string> aliases;  // every other name that reaches this node
  int64_t slots = 0;
  int64_t slots_max = 0;
  NodeState state = NodeState::kUp;
  bool slots_given = false;
  bool local = false;                // this node is the host berth runs on
  std::string user;
};

}  // namespace berth::alloc
