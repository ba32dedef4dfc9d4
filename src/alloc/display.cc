#include "alloc/display.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cstring>

#include "alloc/hostlist.h"
#include "util/strings.h"

namespace berth::alloc {
namespace {

// spec 01 §3: the version of the JSON and XML shapes.
constexpr int kFormatVersion = 1;

std::string_view yes(bool b) { return b ? "true" : "false"; }

// Copies a literal: its size is a constant, so the copy is a few moves, not a call.
template <size_t N>
char* put(char* out, const char (&text)[N]) {
  std::memcpy(out, text, N - 1);
  return out + N - 1;
}
char* put(char* out, std::string_view text) {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}
char* put(char* out, bool b) { return b ? put(out, "true") : put(out, "false"); }
template <class Integer>
char* put_number(char* out, Integer v) {
  return fmt::format_to(out, FMT_COMPILE("{}"), v);
}

// Appends node `n` of write_json() when it is the common kind — no aliases, no user,
// names that are JSON strings as they are — in one piece: the buffer grows once, by
// at most what the node can take, and each literal is a constant-sized copy. Returns
// false for any other node.
bool append_plain_node(std::string& buf, const Node& n, bool first) {
  if (!n.aliases.empty() || !n.user.empty() || !str::is_plain_json(n.name) ||
      (n.rawname != n.name && !str::is_plain_json(n.rawname))) {
    return false;
  }
  // Room for all but the names: the literals (186 bytes), three numbers of at most 20
  // characters, two booleans of at most 5 and a state name (268 at most), with a margin:
  // writing past it corrupts the output (Display.JsonIsWhatNlohmannWrites' widest node).
  constexpr size_t kFixed = 384;
  size_t at = buf.size();
  buf.resize(at + kFixed + n.name.size() + n.rawname.size());
  char* out = buf.data() + at;
  out = first ? put(out, "[\n    {\n      \"index\": ") : put(out, ",\n    {\n      \"index\": ");
  out = put_number(out, n.index);
  out = put(out, ",\n      \"name\": \"");
  out = put(out, n.name);
  out = put(out, "\",\n      \"rawname\": \"");
  out = put(out, n.rawname);
  out = put(out, "\",\n      \"aliases\": [],\n      \"slots\": ");
  out = put_number(out, n.slots);
  out = put(out, ",\n      \"slots_max\": ");
  out = put_number(out, n.slots_max);
  out = put(out, ",\n      \"slots_given\": ");
  out = put(out, n.slots_given);
  out = put(out, ",\n      \"state\": \"");
  out = put(out, std::string_view(node_state_name(n.state)));
  out = put(out, "\",\n      \"local\": ");
  out = put(out, n.local);
  out = put(out, "\n    }");
  buf.resize(static_cast<size_t>(out - buf.data()));
  return true;
}

}  // namespace

void write_json(const Allocation& a, const std::function<void(std::string_view)>& out) {
  using namespace std::string_view_literals;
  // Written straight into a buffer handed on every 256 KiB, as nlohmann's dump(2) lays
  // it out: building the tree first cost a node per field and 20 MB of string.
  constexpr size_t kFlushAt = 256 * 1024;
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
  if (!a.job_step.empty()) {
    buf += ",\n  \"job_step\": "sv;
    text(a.job_step);
  }
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
  std::string out = fmt::format(
      "allocation: {}{}{}{}, {} node(s), {} slot(s){}\n", a.owner,
      a.scheduler_owned ? " (scheduler-owned)" : "", a.job_id.empty() ? "" : ", job " + a.job_id,
      a.job_step.empty() ? "" : " step " + a.job_step, up, a.total_slots,
      a.job_step.empty() ? "" : " (the step's nodes; a node's slots: the CPUs the step was given there)");
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
