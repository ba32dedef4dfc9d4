#include "alloc/node_table.h"

#include <algorithm>
#include <array>

#include "util/memory.h"
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
  return std::string(short_view(name));
}

std::string_view NodeTable::short_view(std::string_view name) const {
  size_t dot = name.find('.');
  // A leading dot would leave no name at all; keep such a name whole.
  if (dot == std::string_view::npos || dot == 0 || keep_fqdn_ || str::is_ip_address(name)) {
    return name;
  }
  return name.substr(0, dot);
}

bool NodeTable::is_local_name(std::string_view name) const {
  return std::find(local_names_.begin(), local_names_.end(), name) != local_names_.end();
}

std::string_view NodeTable::NameText::operator()(size_t i) const {
  const NameRef& r = table->names_[i];
  const Node& n = table->nodes_[r.node];
  return r.which == 0 ? std::string_view(n.name) : std::string_view(n.aliases[r.which - 1]);
}

void NodeTable::reserve(size_t n) {
  nodes_.reserve(n);
  // The room is reserved to be written: its pages are asked for at once.
  memory::populate_for_writing(nodes_.data() + nodes_.size(),
                               (nodes_.capacity() - nodes_.size()) * sizeof(Node));
  names_.reserve(n);
  memory::populate_for_writing(names_.data() + names_.size(),
                               (names_.capacity() - names_.size()) * sizeof(NameRef));
  by_name_.reserve(n);
}

void NodeTable::index_name(size_t index, uint32_t which, const NameIndex::Probe* absent) {
  names_.push_back(NameRef{static_cast<uint32_t>(index), which});
  std::string_view name = NameText{this}(names_.size() - 1);
  if (absent) {
    by_name_.insert(names_.size() - 1, *absent);
    return;
  }
  // The first node a name reaches keeps it.
  if (name.empty() || by_name_.find(name)) {
    names_.pop_back();
    return;
  }
  by_name_.insert(names_.size() - 1);
}

std::optional<size_t> NodeTable::lookup(std::string_view name) const {
  auto i = by_name_.find(name);
  if (!i) return std::nullopt;
  return names_[*i].node;
}

std::optional<size_t> NodeTable::find(std::string_view name) const {
  if (auto hit = lookup(name)) return hit;
  return find_otherwise(name);
}

std::optional<size_t> NodeTable::find_otherwise(std::string_view name) const {
  std::string_view shortened = short_view(name);
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
  // The look-up of the name itself is also where it goes: most names are short and new.
  NameIndex::Probe probe = by_name_.probe(spec.name);
  if (probe.found) return {names_[*probe.found].node, false};
  if (auto hit = find_otherwise(spec.name)) return {*hit, false};
  for (const std::string& a : spec.aliases) {
    if (auto hit = find(a)) return {*hit, false};
  }

  // Made in place: the index reads each name from the node.
  const size_t index = nodes_.size();
  Node& n = nodes_.emplace_back();
  n.index = index;
  std::string_view name = short_view(spec.name);
  const bool shortened = name.size() != spec.name.size();
  n.name = name;
  n.rawname = spec.name;
  n.slots = spec.slots;
  n.slots_max = spec.slots_max;
  n.slots_given = spec.slots_given;
  up_slots_ += n.slots;
  n.user = spec.user;
  n.local = is_local_name(n.rawname) || (shortened && is_local_name(n.name));
  if (shortened) n.aliases.push_back(n.rawname);
  for (const std::string& a : spec.aliases) {
    if (a != n.name && std::find(n.aliases.begin(), n.aliases.end(), a) == n.aliases.end()) {
      n.aliases.push_back(a);
    }
  }
  const size_t aliases = n.aliases.size();
  index_name(index, 0, !n.name.empty() && !shortened ? &probe : nullptr);
  for (size_t k = 0; k < aliases; ++k) index_name(index, static_cast<uint32_t>(k + 1));
  return {index, true};
}

void NodeTable::insert_all(const std::function<void(const NodeSink&)>& each) {
  // The specs waiting to be inserted, oldest at `next`.
  constexpr size_t kAhead = 8;
  std::array<NodeSpec, kAhead> waiting;
  size_t next = 0, held = 0;
  each([&](const NodeSpec& s) {
    by_name_.prefetch(s.name);
    if (held < kAhead) {
      waiting[(next + held++) % kAhead] = s;
      return;
    }
    insert(waiting[next]);
    waiting[next] = s;
    next = (next + 1) % kAhead;
  });
  for (; held > 0; --held, next = (next + 1) % kAhead) insert(waiting[next]);
}

void NodeTable::set_slots(size_t index, int64_t slots) {
  Node& n = nodes_[index];
  if (n.state == NodeState::kUp) up_slots_ += slots - n.slots;
  n.slots = slots;
}

void NodeTable::exclude(size_t index) {
  Node& n = nodes_[index];
  if (n.state == NodeState::kUp) up_slots_ -= n.slots;
  n.state = NodeState::kNotIncluded;
}

}  // namespace berth::alloc
