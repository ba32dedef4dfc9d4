#include "alloc/display.h"

#include <fmt/format.h>

#include <cstring>

#include "alloc/hostlist.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

// spec 01 §3: the version of the JSON and XML shapes.
constexpr int kFormatVersion = 1;

std::string_view yes(bool b) { return b ? "true" : "false"; }

// Appends node `n` of write_json() when it is the common kind — no aliases, no user,
// names that are JSON strings as they are — in one piece: its size is known, so the
// buffer grows once and every part is a copy. Returns false for any other node.
bool append_plain_node(std::string& buf, const Node& n, bool first) {
  using namespace std::string_view_literals;
  if (!n.aliases.empty() || !n.user.empty() || !str::is_plain_json(n.name) ||
      !str::is_plain_json(n.rawname)) {
    return false;
  }
  fmt::format_int index(n.index), slots(n.slots), slots_max(n.slots_max);
  const std::string_view parts[] = {
      first ? "[\n    {\n      \"index\": "sv : ",\n    {\n      \"index\": "sv,
      std::string_view(index.data(), index.size()),
      ",\n      \"name\": \""sv,
      n.name,
      "\",\n      \"rawname\": \""sv,
      n.rawname,
      "\",\n      \"aliases\": [],\n      \"slots\": "sv,
      std::string_view(slots.data(), slots.size()),
      ",\n      \"slots_max\": "sv,
      std::string_view(slots_max.data(), slots_max.size()),
      ",\n      \"slots_given\": "sv,
      yes(n.slots_given),
      ",\n      \"state\": \""sv,
      node_state_name(n.state),
      "\",\n      \"local\": "sv,
      yes(n.local),
      "\n    }"sv,
  };
  size_t size = 0;
  for (std::string_view p : parts) size += p.size();
  size_t at = buf.size();
  buf.resize(at + size);
  char* out = buf.data() + at;
  for (std::string_view p : parts) {
    std::memcpy(out, p.data(), p.size());
    out += p.size();
  }
  return true;
}

}  // namespace

void write_json(const Allocation& a, const std::function<void(std::string_view)>& out) {
  using namespace std::string_view_literals;
  // Written straight into a buffer handed on every 64 KiB, as nlohmann's dump(2) lays
  // it out: building the tree first cost a node per field and 20 MB of string.
  constexpr size_t kFlushAt = 64 * 1024;
  std::string buf;
  buf.reserve(kFlushAt + 4096);
  auto flush = [&] {
    if (!buf.empty()) out(buf);
    buf.clear();
  };
  auto text = [&buf](std::string_view s) { str::append_json_string(buf, s); };
  auto num = [&buf](auto n) {
    fmt::format_int digits(n);
    buf.append(digits.data(), digits.size());
  };
  buf += "{\n  \"version\": "sv;
  num(kFormatVersion);
  buf += ",\n  \"owner\": "sv;
  text(a.owner);
  buf += ",\n  \"scheduler_owned\": "sv;
  buf += yes(a.scheduler_owned);
  buf += ",\n  \"job_id\": "sv;
  text(a.job_id);
  buf += ",\n  \"total_slots\": "sv;
  num(a.total_slots);
  buf += ",\n  \"nodes\": "sv;
  if (a.nodes.empty()) buf += "[]"sv;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& n = a.nodes[i];
    if (append_plain_node(buf, n, i == 0)) {
      if (i + 1 == a.nodes.size()) buf += "\n  ]"sv;
      if (buf.size() >= kFlushAt) flush();
      continue;
    }
    buf += i == 0 ? "[\n    {\n      \"index\": "sv : ",\n    {\n      \"index\": "sv;
    num(n.index);
    buf += ",\n      \"name\": "sv;
    text(n.name);
    buf += ",\n      \"rawname\": "sv;
    text(n.rawname);
    buf += ",\n      \"aliases\": "sv;
    if (n.aliases.empty()) buf += "[]"sv;
    for (size_t k = 0; k < n.aliases.size(); ++k) {
      buf += k == 0 ? "[\n        "sv : ",\n        "sv;
      text(n.aliases[k]);
      if (k + 1 == n.aliases.size()) buf += "\n      ]"sv;
    }
    buf += ",\n      \"slots\": "sv;
    num(n.slots);
    buf += ",\n      \"slots_max\": "sv;
    num(n.slots_max);
    buf += ",\n      \"slots_given\": "sv;
    buf += yes(n.slots_given);
    buf += ",\n      \"state\": "sv;
    text(node_state_name(n.state));
    buf += ",\n      \"local\": "sv;
    buf += yes(n.local);
    if (!n.user.empty()) {
      buf += ",\n      \"user\": "sv;
      text(n.user);
    }
    buf += "\n    }"sv;
    if (i + 1 == a.nodes.size()) buf += "\n  ]"sv;
    if (buf.size() >= kFlushAt) flush();
  }
  buf += "\n}\n"sv;
  flush();
}

std::string to_json(const Allocation& a) {
  std::string out;
  write_json(a, [&out](std::string_view piece) { out.append(piece); });
  return out;
}

std::string to_xml(const Allocation& a) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<allocation version=\"{}\" owner=\"{}\" scheduler_owned=\"{}\" job_id=\"{}\" "
      "total_slots=\"{}\">\n",
      kFormatVersion, str::xml_escape(a.owner), yes(a.scheduler_owned), str::xml_escape(a.job_id),
      a.total_slots);
  for (const Node& n : a.nodes) {
    out += fmt::format(
        "  <node index=\"{}\" name=\"{}\" rawname=\"{}\" slots=\"{}\" slots_max=\"{}\" "
        "slots_given=\"{}\" state=\"{}\" local=\"{}\"",
        n.index, str::xml_escape(n.name), str::xml_escape(n.rawname), n.slots, n.slots_max,
        yes(n.slots_given), node_state_name(n.state), yes(n.local));
    if (!n.user.empty()) out += fmt::format(" user=\"{}\"", str::xml_escape(n.user));
    if (n.aliases.empty()) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    for (const std::string& al : n.aliases) {
      out += fmt::format("    <alias name=\"{}\"/>\n", str::xml_escape(al));
    }
    out += "  </node>\n";
  }
  out += "</allocation>\n";
  return out;
}

std::string to_text(const Allocation& a) {
  size_t up = a.up_nodes().size();
  std::string out = fmt::format("allocation: {}{}{}, {} node(s), {} slot(s)\n", a.owner,
                                a.scheduler_owned ? " (scheduler-owned)" : "",
                                a.job_id.empty() ? "" : ", job " + a.job_id, up, a.total_slots);
  size_t w = 4;
  for (const Node& n : a.nodes) w = std::max(w, n.name.size());
  // One buffer for the whole table: allocations have 10^5 nodes.
  fmt::memory_buffer buf;
  fmt::format_to(std::back_inserter(buf), "  {:>5}  {:<{}}  {:>6}  {:>6}  {:<5}  {:<12}  {}\n",
                 "index", "name", w, "slots", "max", "given", "state", "aliases");
  for (const Node& n : a.nodes) {
    std::string aliases = str::join(n.aliases, ",");
    if (n.local) aliases = aliases.empty() ? "(local)" : aliases + " (local)";
    fmt::format_to(std::back_inserter(buf), "  {:>5}  {:<{}}  {:>6}  {:>6}  {:<5}  {:<12}  {}\n",
                   n.index, str::printable(n.name, 256), w, n.slots,
                   n.slots_max == 0 ? std::string("-") : std::to_string(n.slots_max),
                   n.slots_given ? "yes" : "no", node_state_name(n.state), aliases);
  }
  out.append(buf.data(), buf.size());
  return out;
}

}  // namespace berth::alloc
