#include "alloc/display.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "alloc/hostlist.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

// spec 01 §3: the version of the JSON and XML shapes.
constexpr int kFormatVersion = 1;

const char* yes(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string to_json(const Allocation& a) {
  nlohmann::ordered_json j;
  j["version"] = kFormatVersion;
  j["owner"] = a.owner;
  j["scheduler_owned"] = a.scheduler_owned;
  j["job_id"] = a.job_id;
  j["total_slots"] = a.total_slots;
  j["nodes"] = nlohmann::ordered_json::array();
  for (const Node& n : a.nodes) {
    nlohmann::ordered_json jn;
    jn["index"] = n.index;
    jn["name"] = n.name;
    jn["rawname"] = n.rawname;
    jn["aliases"] = n.aliases;
    jn["slots"] = n.slots;
    jn["slots_max"] = n.slots_max;
    jn["slots_given"] = n.slots_given;
    jn["state"] = node_state_name(n.state);
    jn["local"] = n.local;
    if (!n.user.empty()) jn["user"] = n.user;
    j["nodes"].push_back(std::move(jn));
  }
  // Replace rather than throw on invalid UTF-8: a name is never allowed to crash output.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
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
