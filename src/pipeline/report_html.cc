// The run report as one self-contained HTML page (spec 04 §8): a summary, a timeline of
// steps on cores and a table of every step.
//
// The summary and the table are plain HTML, readable without scripts and by grep. The
// timeline is drawn in the browser by a small inline script from the run's data,
// embedded as a JSON block (`<script type="application/json" id="berth-run">`), so
// that the page can be checked in a real browser: the script marks the svg with
// data-rendered=<bars drawn> (tests/e2e/report_html_test.sh). Nothing is fetched from
// the network.
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "pipeline/executor.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

using json = nlohmann::ordered_json;

// Text for a <pre>: escaped as everywhere (str::xml_escape), its newlines kept.
std::string pre_text(std::string_view text) {
  std::string out;
  bool first = true;
  for (auto line : str::split(text, '\n')) {
    if (!first) out += '\n';
    first = false;
    out += str::xml_escape(line);
  }
  return out;
}

// The run's data for the script, and the earlier runs' that computed its cached steps. '<' is written \u003c so that no step name or
// reason can end the script element ("</script>") early; '<' occurs in JSON only
// inside strings, where the escape means the same character.
json steps_data(const std::vector<StepRecord>& steps) {
  json out = json::array();
  for (const auto& s : steps) {
    out.push_back({{"name", s.name}, {"state", step_state_name(s.state)}, {"node", s.node},
                   {"cores", s.cores}, {"start_s", s.start_s}, {"end_s", s.end_s},
                   {"exit_code", s.exit_code}, {"reason", s.reason}});
  }
  return out;
}

std::string data_block(const RunReport& r, const std::vector<EarlierRun>& earlier) {
  json j;
  j["pipeline"] = r.pipeline;
  j["started"] = r.started;
  j["elapsed_s"] = r.elapsed_s;
  j["steps"] = steps_data(r.steps);
  j["earlier"] = json::array();
  for (const auto& e : earlier) {
    j["earlier"].push_back({{"run", e.id}, {"elapsed_s", e.elapsed_s}, {"steps", steps_data(e.steps)}});
  }
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// The timeline, drawn from the data block. Lanes: one per node:core that any drawn
// step ran on, sorted by node then core. A step that ran (executed, failed or
// cancelled, with a placement) is one rect.bar on its first core's lane, and a
// rect.bar-extra on each further core's lane, so a lane shows everything that held
// its core. A bar is at least 1 px wide and kept inside the plot.
constexpr std::string_view kScript = R"JS(
(function () {
var run = JSON.parse(document.getElementById("berth-run").textContent);
function draw(svg, steps, elapsed) {
  var NS = "http://www.w3.org/2000/svg";
  var LABEL = 150, PLOT = 800, LANE = 22, TOP = 24, PAD = 30;
  function cores(text) {  // "0-1,4" -> [0, 1, 4]
    var out = [];
    String(text).split(",").forEach(function (part) {
      var m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
      if (!m) return;
      var a = +m[1], b = m[2] === undefined ? a : +m[2];
      for (var c = a; c <= b; c++) out.push(c);
    });
    return out;
  }
  var drawn = steps.filter(function (s) {
    return (s.state === "executed" || s.state === "failed" || s.state === "cancelled") &&
        s.node !== "" && cores(s.cores).length > 0;
  });
  var lanes = [], index = {};
  drawn.forEach(function (s) {
    cores(s.cores).forEach(function (c) {
      var k = s.node + ":" + c;
      if (!(k in index)) { index[k] = true; lanes.push({node: s.node, core: c, key: k}); }
    });
  });
  lanes.sort(function (a, b) {
    return a.node < b.node ? -1 : a.node > b.node ? 1 : a.core - b.core;
  });
  lanes.forEach(function (l, i) { index[l.key] = i; });
  var end = elapsed;
  drawn.forEach(function (s) { end = Math.max(end, s.end_s); });
  end = Math.max(end, 1e-3);
  var width = LABEL + PLOT + PAD, height = TOP + lanes.length * LANE + PAD;
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  }
  for (var t = 0; t <= 4; t++) {  // five ticks across the run
    var x = LABEL + PLOT * t / 4;
    el("line", {x1: x, x2: x, y1: TOP - 6, y2: height - PAD, "class": "tick"});
    el("text", {x: x, y: TOP - 10, "class": "tick-label", "text-anchor": "middle"},
       (end * t / 4).toFixed(end < 1 ? 3 : 2) + " s");
  }
  lanes.forEach(function (l, i) {
    el("text", {x: 4, y: TOP + i * LANE + 15, "class": "lane"}, l.key);
  });
  function x_of(t) { return LABEL + PLOT * Math.min(Math.max(t, 0), end) / end; }
  drawn.forEach(function (s) {
    var x = x_of(s.start_s), w = Math.max(1, x_of(s.end_s) - x);
    x = Math.min(x, LABEL + PLOT - w);
    var tip = s.name + ": " + s.state + " on " + s.node + " cores " + s.cores + ", " +
        s.start_s.toFixed(3) + "-" + s.end_s.toFixed(3) + " s (" +
        (s.end_s - s.start_s).toFixed(3) + " s)" + (s.reason ? "; " + s.reason : "");
    cores(s.cores).forEach(function (c, n) {
      var r = el("rect", {"class": (n === 0 ? "bar " : "bar-extra ") + s.state,
                          x: x.toFixed(2), y: TOP + index[s.node + ":" + c] * LANE + 2,
                          width: w.toFixed(2), height: LANE - 4,
                          "data-step": s.name, "data-lane": s.node + ":" + c,
                          "data-start": s.start_s, "data-end": s.end_s});
      var title = document.createElementNS(NS, "title");
      title.textContent = tip;
      r.appendChild(title);
    });
  });
  svg.setAttribute("data-rendered", String(drawn.length));
}
draw(document.getElementById("timeline"), run.steps, run.elapsed_s);
run.earlier.forEach(function (e, i) {
  draw(document.getElementById("timeline-earlier-" + i), e.steps, e.elapsed_s);
});
})();
)JS";

constexpr std::string_view kStyle = R"CSS(
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
.summary span { margin-right: 1.2em; }
svg { border: 1px solid #ddd; background: #fcfcfc; }
svg text { font-size: 11px; font-family: ui-monospace, monospace; }
line.tick { stroke: #e4e4e4; }
rect.executed { fill: #4a9a6a; }
rect.failed { fill: #c94040; }
rect.cancelled { fill: #999; }
rect.bar-extra { opacity: 0.7; }
table { border-collapse: collapse; margin-top: 1em; font-size: 0.9em; }
th, td { text-align: left; padding: 2px 10px; border-bottom: 1px solid #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td, tr.refused td { color: #b22; }
tr.cached td, tr.skipped td { color: #777; }
tr.log-tail pre, section.log pre { background: #f6f6f6; padding: 4px 8px; margin: 0;
  white-space: pre-wrap; font-size: 0.85em; }
tr.log-tail td { color: #522; }
section.log h3 { font-size: 1em; margin: 1em 0 0.3em; }
)CSS";

}  // namespace

// A timeline for each earlier run that computed some of the cached steps: headed by
// the run (berth runs names it), drawn by the script like this run's.
std::string earlier_timelines(const std::vector<EarlierRun>& earlier) {
  std::string out;
  for (size_t i = 0; i < earlier.size(); ++i) {
    const EarlierRun& e = earlier[i];
    out += fmt::format(
        "<h3 class=\"earlier\">Computed by run {0}{1}{2}: {3} of the cached steps</h3>\n"
        "<svg id=\"timeline-earlier-{4}\" class=\"earlier\" data-run=\"{0}\" "
        "xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"40\" role=\"img\" "
        "aria-label=\"steps of run {0} on cores over time\"></svg>\n",
        str::xml_escape(e.id), e.started.empty() ? "" : ", started " + str::xml_escape(e.started),
        e.host.empty() ? "" : " on " + str::xml_escape(e.host), e.steps.size(), i);
  }
  return out;
}

std::string report_html(const RunReport& r, const std::map<std::string, EmbeddedLog>& logs,
                        const std::vector<EarlierRun>& earlier) {
  // Text and attribute values are escaped as for XML (str::xml_escape): HTML5 defines the
  // same five entities, and the page needs no rule XML does not have.
  //
  // The summary: how many steps ended how, and how long the run took.
  std::string summary;
  for (StepState s : {StepState::kExecuted, StepState::kCached, StepState::kFailed,
                      StepState::kSkipped, StepState::kRefused, StepState::kCancelled}) {
    int n = r.count(s);
    if (n == 0 && s != StepState::kExecuted && s != StepState::kCached) continue;
    summary += fmt::format("<span class=\"count\" data-state=\"{}\">{} {}</span>",
                           step_state_name(s), n, step_state_name(s));
  }
  summary += fmt::format("<span id=\"elapsed\">{:.2f} s</span>", r.elapsed_s);
  if (!r.started.empty()) summary += "<span>started " + str::xml_escape(r.started) + "</span>";

  // Cached steps ran in an earlier run; they are named under the timeline.
  std::string cached;
  for (const auto& s : r.steps) {
    if (s.state != StepState::kCached) continue;
    cached += (cached.empty() ? "" : ", ") + str::xml_escape(s.name);
  }

  // The table: every step, in graph order, each with a link to its log (embedded
  // below) or the command that prints it; under a step that ran and did not succeed,
  // its last lines. Logs are any bytes a step printed: escaped like everything else.
  std::string rows;
  std::string sections;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const StepRecord& s = r.steps[i];
    bool ran = s.end_s > 0 || s.start_s > 0;
    std::string name = str::xml_escape(s.name);
    std::string read_it = str::xml_escape("berth log " + s.name);
    auto embedded = logs.find(s.name);
    std::string link;
    if (embedded != logs.end()) {
      link = fmt::format("<a class=\"log\" href=\"#log-{}\">log</a>", i);
      const EmbeddedLog& l = embedded->second;
      std::string note =
          l.text.size() < l.size
              ? fmt::format("<p class=\"note\">The last {} of {} bytes; all of it: "
                            "<code>{}</code></p>",
                            l.text.size(), l.size, read_it)
              : "";
      sections += fmt::format(
          "<section class=\"log\" id=\"log-{}\" data-step=\"{}\"><h3>{}</h3>{}"
          "<pre>{}</pre></section>\n",
          i, name, name, note, pre_text(l.text));
    } else if (!s.log.empty()) {
      link = "<code>" + read_it + "</code>";
    }
    rows += fmt::format(
        "<tr class=\"{0}\" data-step=\"{1}\"><td>{1}</td><td>{0}</td><td>{2}</td><td>{3}</td>"
        "<td class=\"num\">{4}</td><td class=\"num\">{5}</td><td class=\"num\">{6}</td>"
        "<td class=\"reason\">{7}</td><td>{8}</td></tr>\n",
        step_state_name(s.state), name, str::xml_escape(s.node), str::xml_escape(s.cores),
        ran ? fmt::format("{:.3f}", s.start_s) : "", ran ? fmt::format("{:.3f}", s.end_s) : "",
        ran ? fmt::format("{:.3f}", s.end_s - s.start_s) : "", str::xml_escape(s.reason), link);
    if (!s.log_tail.empty() && s.state != StepState::kExecuted && s.state != StepState::kCached) {
      rows += fmt::format(
          "<tr class=\"log-tail\" data-step=\"{}\"><td colspan=\"9\"><pre>{}</pre></td></tr>\n",
          name, pre_text(s.log_tail));
    }
  }

  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>berth run: {0}</title>\n<style>{1}</style></head><body>\n"
      "<h1>berth run: {0}</h1>\n<p class=\"summary\" id=\"counts\">{2}</p>\n"
      "<h2>Timeline</h2>\n<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"960\" height=\"40\" role=\"img\" aria-label=\"steps on cores over time\"></svg>\n"
      "<noscript><p>The timeline is drawn by a script; the table below has the same "
      "times.</p></noscript>\n"
      "<p id=\"cached\">{3}</p>\n{8}"
      "<h2>Steps</h2>\n<table id=\"steps\"><thead><tr><th>step</th><th>state</th><th>node</th>"
      "<th>cores</th><th>start (s)</th><th>end (s)</th><th>duration (s)</th><th>reason</th>"
      "<th>log</th></tr></thead><tbody>\n{4}</tbody></table>\n"
      "{7}"
      "<script type=\"application/json\" id=\"berth-run\">{5}</script>\n"
      "<script>{6}</script>\n</body></html>\n",
      str::xml_escape(r.pipeline), kStyle, summary,
      cached.empty() ? "" : "Cached (not run this time): " + cached, rows, data_block(r, earlier), kScript,
      sections.empty() ? "" : "<h2>Logs</h2>\n" + sections, earlier_timelines(earlier));
}

}  // namespace berth::pipeline
