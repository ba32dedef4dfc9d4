#include "alloc/node_table.h"

#include <algorithm>

#include "util/strings.h"

namespace berth::alloc {

const char* node_state_name(NodeState s) {
  switch (s) {
    case NodeState::kUp: return "up";
    case NodeState::kNotIncluded: return "not-included";
  }
  return "up";
}

NodeTable::NodeTable(const LocalHost& local, bool keep_fqdn)
    : local_(local), keep_fqdn_(keep_fqdn) {
  local_names_ = local_.aliases;
  local_names_.push_back(local_.hostname);
  local_names_.push_back(short_name(local_.hostname));
}

std::string NodeTable::short_name(std::string_view name) const {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || keep_fqdn_ || str::is_ip_address(name)) {
    return std::string(name);
  }
  // A leading dot would leave no name at all; keep such a name whole.
  if (dot == std::string_view::npos || dot == 0) return std::string(name);
  return std::string(name.substr(0, dot));
}

bool NodeTable::is_local_name(std::string_view name) const {
  return std::find(local_names_.begin(), local_names_.end(), name) != local_names_.end();
}

void NodeTable::index_name(const std::string& name, size_t index) {
  if (!name.empty()) by_name_.emplace(name, index);
}

std::optional<size_t> NodeTable::lookup(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> NodeTable::find(std::string_view name) const {
  if (auto hit = lookup(name)) return hit;
  std::string shortened = short_name(name);
  bool is_short = shortened.size() == name.size();
  if (!is_short) {
    if (auto hit = lookup(shortened)) return hit;
  }
  if (is_local_name(name) || (!is_short && is_local_name(shortened))) {
    for (const Node& n : nodes_) {
      if (n.local) return n.index;
    }
  }
  return std::nullopt;
}

std::pair<size_t, bool> NodeTable::insert(const NodeSpec& spec) {
  // Dedup: the spec's name, its short form and each alias are looked up; the first
  // match is the node. The held entry is authoritative (spec 01 §6): its slots stand.
  if (auto hit = find(spec.name)) return {*hit, false};
  for (const std::string& a : spec.aliases) {
    if (auto hit = find(a)) return {*hit, false};
  }

  Node n;
  n.index = nodes_.size();
  n.rawname = spec.name;
  n.name = short_name(spec.name);
  n.slots = spec.slots;
  n.slots_max = spec.slots_max;
  n.slots_given = spec.slots_given;
  n.user = spec.user;
  n.local = is_local_name(spec.name) || is_local_name(n.name);
  if (n.rawname != n.name) n.aliases.push_back(n.rawname);
  for (const std::string& a : spec.aliases) {
    if (a != n.name && std::find(n.aliases.begin(), n.aliases.end(), a) == n.aliases.end()) {
      n.aliases.push_back(a);
    }
  }
  index_name(n.name, n.index);
  for (const std::string& a : n.aliases) index_name(a, n.index);
  nodes_.push_back(std::move(n));
  return {nodes_.back().index, true};
}

int64_t NodeTable::total_slots() const {
  int64_t total = 0;
  for (const Node& n : nodes_) {
    if (n.state == NodeState::kUp) total += n.slots;
  }
  return total;
}

}  // namespace berth::alloc
