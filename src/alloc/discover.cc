#include "alloc/discover.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "alloc/hostlist.h"
#include "alloc/node_table.h"
#include "util/files.h"

namespace berth::alloc {
namespace {

// Priorities as spec 01 §1 gives them. Equal priorities are asked in this order; when
// two of them both claim an allocation, discovery refuses rather than guess (PRRTE
// silently takes the first).
const std::vector<SourceInfo> kSources = {
    {"simulator", 1000, false, discover_simulator},
    {"pbs", 100, true, discover_pbs},
    {"gridengine", 100, true, discover_gridengine},
    {"flux", 100, true, discover_flux},
    {"lsf", 75, true, discover_lsf},
    {"slurm", 50, true, discover_slurm},
    {"hosts", 1, false, discover_hosts},
};

// The most nodes one allocation may have, multiplied (spec 01 §2.6).
constexpr size_t kMaxNodes = 10'000'000;

// The multiplier (spec 01 §2.6): N copies of every node, to simulate a larger cluster
// from a smaller one. Copy k >= 1 of "node" is named "node-x<k>" so that copies are
// distinct node-table entries rather than duplicates that dedup would drop.
void multiply(const NodeSpec& s, int64_t factor, const NodeSink& add) {
  add(s);
  if (factor <= 1) return;
  NodeSpec c = s;
  c.aliases.clear();
  size_t dot = s.name.find('.');
  for (int64_t k = 1; k < factor; ++k) {
    std::string suffix = fmt::format("-x{}", k);
    c.name = dot == std::string::npos || dot == 0
                 ? s.name + suffix
                 : s.name.substr(0, dot) + suffix + s.name.substr(dot);
    add(c);
  }
}

// What a --host/--hostfile filter asks of an allocation.
struct Selection {
  bool any_positive = false;            // it names nodes to keep (else: keep all)
  std::set<size_t> keep;
  std::set<size_t> drop;
};

std::string describe(const Allocation& a, const NodeTable& table) {
  std::vector<std::string> names;
  for (const Node& n : table.nodes()) names.push_back(n.name);
  return fmt::format("the {} allocation ({})", a.owner, hostlist::compress(names));
}

Result<void> select_name(Selection& sel, const NodeTable& table, const std::string& name,
                         const std::string& origin, const std::string& where) {
  auto idx = table.find(name);
  if (!idx) {
    return fail(Errc::kRefused,
                fmt::format("{}: node '{}' is not in {}; a filter cannot add nodes", origin,
                            name, where));
  }
  sel.keep.insert(*idx);
  return Ok{};
}

Result<void> apply_filter(const Input& in, Allocation& a, NodeTable& table) {
  const Options& o = in.options;
  std::string where = describe(a, table);
  Selection sel;
  std::vector<std::pair<size_t, int64_t>> limits;  // index -> slots asked for

  if (o.hostfile && a.owner != "hosts") {
    const std::string origin = "--hostfile " + *o.hostfile;
    BERTH_TRY(std::string text, files::read_file(*o.hostfile));
    auto parsed = parse_hostfile(text, *o.hostfile);
    if (!parsed.ok()) return parsed.error();
    for (const NodeSpec& s : parsed->nodes) {
      sel.any_positive = true;
      BERTH_CHECK(select_name(sel, table, s.name, origin, where));
      if (s.slots_given) limits.emplace_back(*table.find(s.name), s.slots);
    }
    for (const std::string& ex : parsed->excluded) {
      auto idx = table.find(ex);
      if (!idx) {
        return fail(Errc::kRefused,
                    fmt::format("{}: excluded node '{}' is not in {}", origin, ex, where));
      }
      sel.drop.insert(*idx);
    }
  }

  for (const std::string& value : o.hosts) {
    auto tokens = parse_dash_host(value, "--host");
    if (!tokens.ok()) return tokens.error();
    for (const HostToken& t : *tokens) {
      sel.any_positive = true;
      switch (t.kind) {
        case HostToken::kName: {
          BERTH_CHECK(select_name(sel, table, t.name, "--host", where));
          size_t idx = *table.find(t.name);
          if (t.slots_explicit && !t.slots_star) {
            limits.emplace_back(idx, t.slots);
          }
          break;
        }
        case HostToken::kRelativeIndex: {
          if (t.index < 0 || static_cast<size_t>(t.index) >= table.nodes().size()) {
            return fail(Errc::kRefused, fmt::format("--host: +n{} names no node: {} has {} node(s)",
                                                    t.index, where, table.nodes().size()));
          }
          sel.keep.insert(static_cast<size_t>(t.index));
          break;
        }
        case HostToken::kEmpty: {
          // Nothing runs yet, so every node is empty: +e takes all, +e:N the first N.
          size_t n = t.count < 0 ? table.nodes().size() : static_cast<size_t>(t.count);
          if (n > table.nodes().size()) {
            return fail(Errc::kRefused,
                        fmt::format("--host: +e:{} asks for {} empty node(s); {} has {}", t.count,
                                    t.count, where, table.nodes().size()));
          }
          for (size_t i = 0; i < n; ++i) sel.keep.insert(i);
          break;
        }
      }
    }
  }

  // A filter may lower a node's slots, never raise them.
  for (auto [idx, want] : limits) {
    const Node& n = table.nodes()[idx];
    if (want > n.slots) {
      return fail(Errc::kRefused,
                  fmt::format("node '{}' asks for {} slots; {} gives it {}", n.name, want,
                              where, n.slots));
    }
  }
  for (auto [idx, want] : limits) table.set_slots(idx, want);

  for (const Node& n : table.nodes()) {
    bool kept = sel.any_positive ? sel.keep.count(n.index) > 0 : true;
    if (sel.drop.count(n.index)) kept = false;
    if (!kept) table.exclude(n.index);
  }
  return Ok{};
}

}  // namespace

std::vector<const Node*> Allocation::up_nodes() const {
  std::vector<const Node*> out;
  for (const Node& n : nodes) {
    if (n.state == NodeState::kUp) out.push_back(&n);
  }
  return out;
}

const std::vector<SourceInfo>& sources() { return kSources; }

Found Found::listed(std::vector<NodeSpec> nodes, std::string job_id) {
  Found f;
  f.job_id = std::move(job_id);
  f.count = nodes.size();
  f.each = [nodes = std::make_shared<const std::vector<NodeSpec>>(std::move(nodes))](
               const NodeSink& add) {
    for (const NodeSpec& s : *nodes) add(s);
  };
  return f;
}

std::vector<NodeSpec> Found::nodes() const {
  std::vector<NodeSpec> out;
  out.reserve(count);
  if (each) each([&out](const NodeSpec& s) { out.push_back(s); });
  return out;
}

Result<Allocation> discover(const Input& in) {
  if (in.options.multiplier < 1) {
    return fail(Errc::kInvalidInput,
                fmt::format("--multiplier: must be at least 1, not {}", in.options.multiplier));
  }

  // 1. Ask the sources in priority order; the first that answers owns the allocation.
  const SourceInfo* owner = nullptr;
  Found found;
  for (const SourceInfo& s : kSources) {
    if (owner && s.priority < owner->priority) break;
    SourceResult r = s.discover(in);
    if (!r.ok()) return std::move(r).error();
    if (!r->has_value()) continue;
    if (owner) {
      return fail(Errc::kRefused,
                  fmt::format("both {} and {} describe an allocation; berth will not guess "
                              "which owns it: unset one's environment",
                              owner->name, s.name));
    }
    owner = &s;
    found = std::move(**r);
  }
  if (!owner) return fail(Errc::kInternal, "no allocation source answered");

  // 2. Insert the nodes, multiplied.
  Allocation a;
  a.owner = owner->name;
  a.scheduler_owned = owner->scheduler_owned;
  a.job_id = found.job_id;
  a.job_step = found.job_step;
  const auto factor = static_cast<size_t>(in.options.multiplier);
  if (found.count > kMaxNodes / factor) {
    if (factor == 1) {
      return fail(Errc::kInvalidInput, fmt::format("the {} allocation has {} nodes, more than {}",
                                                   a.owner, found.count, kMaxNodes));
    }
    return fail(Errc::kInvalidInput,
                fmt::format("--multiplier: {} copies of the {} allocation's {} node(s) are "
                            "more than {} nodes",
                            factor, a.owner, found.count, kMaxNodes));
  }
  NodeTable table(in.local, in.options.keep_fqdn);
  table.reserve(found.count * factor);
  if (found.each) {
    table.insert_all([&](const NodeSink& insert) {
      found.each([&](const NodeSpec& s) { multiply(s, in.options.multiplier, insert); });
    });
  }
  if (table.nodes().empty()) {
    return fail(Errc::kInvalidInput, fmt::format("the {} allocation has no nodes", a.owner));
  }

  // 3. Filter: --host/--hostfile select from an allocation they did not create. For
  //    the hosts source the hostfile is the allocation and --host filters it.
  bool filter = a.owner != "hosts" ? (!in.options.hosts.empty() || in.options.hostfile)
                                   : (!in.options.hosts.empty() && in.options.hostfile);
  if (filter) BERTH_CHECK(apply_filter(in, a, table));

  a.total_slots = table.total_slots();
  a.nodes = std::move(table).take_nodes();
  if (std::none_of(a.nodes.begin(), a.nodes.end(),
                   [](const Node& n) { return n.state == NodeState::kUp; })) {
    return fail(Errc::kRefused,
                fmt::format("the filter excludes every node of the {} allocation", a.owner));
  }
  return a;
}

}  // namespace berth::alloc
