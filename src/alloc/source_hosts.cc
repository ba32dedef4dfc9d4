// The hosts source: the catch-all at the lowest priority (spec 01 §1). With no
// resource manager, the allocation is, in order:
//   1. --hostfile FILE (with --host beside it, the lead's filter narrows it: discover.cc);
//   2. the --host lists;
//   3. the default hostfile, when one exists and names a host;
//   4. the local host, with one slot per usable core (slots not given: a guess).
// It always answers, so discovery always ends with an allocation.
//
// Hostfile exclusions (^host) remove hosts from whatever list wins, matched by name or
// short name ("^node1" drops "node1.cluster.org"), as the node table deduplicates.
//
// Decisions worth knowing:
//   - An explicit --hostfile that names no host is an error, unless --host is given too:
//     then, as in PRRTE, an empty hostfile is no filter and --host is the allocation.
//   - An empty default hostfile is normal (Open MPI installs one that is all comments), so
//     it falls through to the local host.
//   - Relative --host tokens (+n, +e) are refused here: they select from an allocation,
//     and a bare --host list is the allocation, so there is nothing to select from.
//   - "a:*" takes the local usable core count as a guess (slots not given), since
//     berth cannot see a remote node's cores before it runs anything there.
#include <fmt/format.h>

#include <unordered_map>

#include "alloc/source.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

constexpr int64_t kMaxCount = INT32_MAX;

// Reads and parses a hostfile. Every error starts "<label> <path>": the parser's own
// "<origin>:<line>:" for a bad line, or the operating system's word for a failed read.
Result<Hostfile> read_hostfile(const std::string& path, std::string_view label) {
  const std::string origin = fmt::format("{} {}", label, path);
  auto text = files::read_file(path);
  if (!text.ok()) {
    // read_file's messages already start "<path>: "; keep one copy of the path.
    std::string msg = text.error().message();
    if (msg.compare(0, path.size() + 2, path + ": ") == 0) msg.erase(0, path.size() + 2);
    return Error(text.error().code(), fmt::format("{}: {}", origin, msg));
  }
  return parse_hostfile(*text, origin);
}

// The name the node table compares hosts by: the part before the first '.', unless an
// IP address.
std::string_view short_name(std::string_view name) {
  if (str::is_ip_address(name)) return name;
  return name.substr(0, name.find('.'));
}

void remove_excluded(std::vector<NodeSpec>& nodes, const std::vector<std::string>& excluded) {
  if (excluded.empty()) return;
  std::unordered_map<std::string_view, bool> drop;
  for (const std::string& e : excluded) {
    drop[e] = true;
    drop[short_name(e)] = true;
  }
  std::erase_if(nodes, [&](const NodeSpec& n) {
    return drop.count(n.name) > 0 || drop.count(short_name(n.name)) > 0;
  });
}

std::string relative_text(const HostToken& t) {
  if (t.kind == HostToken::kRelativeIndex) return fmt::format("+n{}", t.index);
  return t.count < 0 ? std::string("+e") : fmt::format("+e:{}", t.count);
}

// The nodes every --host value names, merged: across values as within one, a name given
// again adds its slots up and makes them given.
Result<std::vector<NodeSpec>> from_dash_host(const Input& in) {
  const std::vector<std::string>& values = in.options.hosts;
  std::vector<NodeSpec> nodes;
  std::vector<bool> star;  // per node: its slots came from ":*"
  std::unordered_map<std::string, size_t> index;
  for (size_t v = 0; v < values.size(); ++v) {
    const std::string origin = values.size() == 1
                                   ? std::string("--host")
                                   : fmt::format("--host ({} of {})", v + 1, values.size());
    BERTH_TRY(std::vector<HostToken> tokens, parse_dash_host(values[v], origin));
    for (HostToken& t : tokens) {
      if (t.kind != HostToken::kName) {
        return fail(Errc::kRefused,
                    fmt::format("{}: '{}' is relative node syntax, which selects from an "
                                "allocation; a --host list without a resource manager or "
                                "--hostfile is the allocation, so there is none to refer to",
                                origin, relative_text(t)));
      }
      auto [it, fresh] = index.try_emplace(t.name, nodes.size());
      if (fresh) {
        NodeSpec s;
        s.name = std::move(t.name);
        s.slots = t.slots_star ? std::max<int64_t>(1, in.local.cores()) : t.slots;
        s.slots_given = !t.slots_star && t.slots_explicit;
        nodes.push_back(std::move(s));
        star.push_back(t.slots_star);
        continue;
      }
      NodeSpec& s = nodes[it->second];
      if (t.slots_star || star[it->second]) {
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: '{}' is given in more than one --host with ':*'; ':*' "
                                "takes every slot, so it cannot be added to",
                                origin, str::printable(s.name)));
      }
      if (s.slots > kMaxCount - t.slots) {
        return fail(Errc::kInvalidInput, fmt::format("{}: '{}' adds up to more than {} slots",
                                                     origin, str::printable(s.name), kMaxCount));
      }
      s.slots += t.slots;
      s.slots_given = true;
    }
  }
  return nodes;
}

SourceResult found(std::vector<NodeSpec> nodes) {
  return std::optional<Found>(Found::listed(std::move(nodes)));
}

std::string excluded_note(const Hostfile& hf) {
  if (hf.excluded.empty()) return "";
  return fmt::format(" once its {} exclusion(s) are applied", hf.excluded.size());
}

}  // namespace

SourceResult discover_hosts(const Input& in) {
  const Options& o = in.options;
  std::vector<std::string> excluded;

  if (o.hostfile) {
    BERTH_TRY(Hostfile hf, read_hostfile(*o.hostfile, "--hostfile"));
    remove_excluded(hf.nodes, hf.excluded);
    if (!hf.nodes.empty()) return found(std::move(hf.nodes));
    if (o.hosts.empty()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("--hostfile {}: names no host{}", *o.hostfile, excluded_note(hf)));
    }
    excluded = std::move(hf.excluded);
  }

  if (!o.hosts.empty()) {
    BERTH_TRY(std::vector<NodeSpec> nodes, from_dash_host(in));
    remove_excluded(nodes, excluded);
    if (nodes.empty()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("--host: every host it names is excluded by --hostfile {}",
                              o.hostfile.value_or("")));
    }
    return found(std::move(nodes));
  }

  if (o.default_hostfile && files::exists(*o.default_hostfile)) {
    BERTH_TRY(Hostfile hf, read_hostfile(*o.default_hostfile, "default hostfile"));
    remove_excluded(hf.nodes, hf.excluded);
    if (!hf.nodes.empty()) return found(std::move(hf.nodes));
  }

  // The local host, sized by its cores; the count is a guess, never given (spec 01 §4),
  // so a later layer may re-size it and nothing mistakes it for the user's count.
  NodeSpec local;
  local.name = in.local.hostname.empty() ? std::string("localhost") : in.local.hostname;
  local.slots = std::max<int64_t>(1, in.local.cores());
  local.slots_given = false;
  return found({std::move(local)});
}

}  // namespace berth::alloc
