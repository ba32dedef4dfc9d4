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

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <cstdint>
#include <vector>

#include "alloc/node.h"
#include "alloc/source.h"
#include "util/flat_index.h"

namespace berth::alloc {

class NodeTable {
 public:
  NodeTable(const LocalHost& local, bool keep_fqdn);

  // Adds `spec`, or finds the node it duplicates. Returns the node's index and whether
  // it was new.
  std::pair<size_t, bool> insert(const NodeSpec& spec);
  // insert() of every spec `each` hands to its sink, in order, each one's slot in the
  // name index asked for a few specs ahead (FlatIndex::prefetch): an allocation's 10^5
  // names land anywhere in a 2 MB index.
  void insert_all(const std::function<void(const NodeSink&)>& each);

  // The node reached by `name` (its name, rawname or an alias; the local host's names
  // reach the local node), if any.
  std::optional<size_t> find(std::string_view name) const;

  const std::vector<Node>& nodes() const { return nodes_; }
  // A filter's changes: node `index` gets `slots`, or is excluded (kNotIncluded).
  void set_slots(size_t index, int64_t slots);
  void exclude(size_t index);
  // Room for `n` nodes without growing (an allocation of 10^5 nodes is inserted
  // whole).
  void reserve(size_t n);
  // The nodes, moved out: the table is done with.
  std::vector<Node> take_nodes() && { return std::move(nodes_); }

  // Sum of slots over nodes in state kUp (kept as they change: a pass over 10^5 nodes
  // to add them up is a pass over 15 MB).
  int64_t total_slots() const { return up_slots_; }

  // The short form of `name` under this table's rules ("a.b.c" -> "a" unless keep_fqdn
  // or an IP address).
  std::string short_name(std::string_view name) const;

 private:
  std::string_view short_view(std::string_view name) const;
  bool is_local_name(std::string_view name) const;
  std::optional<size_t> lookup(std::string_view name) const;
  // find() past the look-up of `name` itself: its short form, the local host's names.
  std::optional<size_t> find_otherwise(std::string_view name) const;

  // A name that reaches a node: its name (which 0) or its alias which - 1.
  struct NameRef {
    uint32_t node;
    uint32_t which;
  };
  struct NameText {
    const NodeTable* table;
    std::string_view operator()(size_t i) const;
  };
  using NameIndex = FlatIndex<NameText>;
  // Indexes name `which` of node `index` unless another node has it; `absent`: a probe
  // for it that did not find it.
  void index_name(size_t index, uint32_t which, const NameIndex::Probe* absent = nullptr);

  LocalHost local_;
  std::vector<std::string> local_names_;  // every name of the local host
  bool keep_fqdn_;
  std::vector<Node> nodes_;
  int64_t up_slots_ = 0;
  // Every name and alias -> its node, each held once, in the nodes themselves.
  std::vector<NameRef> names_;
  NameIndex by_name_{NameText{this}};
};

}  // namespace berth::alloc
