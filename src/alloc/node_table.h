// NodeTable: the nodes of one allocation, each once (the allocation's node pool; not
// place::NodeTable, which grants placements on them).
//
// Nodes arrive from a source as NodeSpecs; the table decides whether each is a new node
// or one it already holds (spec 01 §6):
//   - names are normalised: an FQDN is cut to its short name, the full name kept as
//     `rawname` and as an alias; an IP address is never cut (--keep-fqdn keeps all);
//   - a spec whose name or any alias matches a held node's name or alias is that
//     node: the held entry is authoritative and the duplicate adds nothing — not a
//     node, not a slot;
//   - the local host (its name, short name, "localhost", its addresses) is merged into
//     one entry marked `local`, never duplicated;
//   - indices are assigned in arrival order and never reused: a node filtered out
//     keeps its index and is marked kNotIncluded.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloc/node.h"
#include "alloc/source.h"

namespace berth::alloc {

class NodeTable {
 public:
  NodeTable(const LocalHost& local, bool keep_fqdn);

  // Adds `spec`, or finds the node it duplicates. Returns the node's index and whether
  // it was new.
  std::pair<size_t, bool> insert(const NodeSpec& spec);

  // The node reached by `name` (its name, rawname or an alias; the local host's names
  // reach the local node), if any.
  std::optional<size_t> find(std::string_view name) const;

  const std::vector<Node>& nodes() const { return nodes_; }
  Node& node(size_t index) { return nodes_[index]; }

  // Sum of slots over nodes in state kUp.
  int64_t total_slots() const;

  // The short form of `name` under this table's rules ("a.b.c" -> "a" unless keep_fqdn
  // or an IP address).
  std::string short_name(std::string_view name) const;

 private:
  bool is_local_name(std::string_view name) const;
  void index_name(const std::string& name, size_t index);
  std::optional<size_t> lookup(std::string_view name) const;

  LocalHost local_;
  std::vector<std::string> local_names_;  // every name of the local host
  bool keep_fqdn_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, size_t> by_name_;  // every name and alias -> index
};

}  // namespace berth::alloc
