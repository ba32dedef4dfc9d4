#!/usr/bin/env bash
# berth report --html, checked in a real browser: the page's script draws the timeline
# from its embedded data, and headless Chromium's DOM shows what it drew (a bar per step
# that ran, each inside the svg with a positive width, no two overlapping in time on one
# core's lane), and a failed step with its reason.
. "$(dirname "$0")/common.sh"
if ! command -v chromium >/dev/null 2>&1; then
  fail "chromium is not installed; this test needs it (Debian: apt-get install chromium)"
  finish
fi

# check_timeline: reads $DOM's svg#timeline and prints one line of facts, or the
# first thing wrong with it prefixed "bad:".
cat >"$T/check_timeline.py" <<'PY'
import sys
from html.parser import HTMLParser

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg, self.rects, self.inside = None, [], False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id") == "timeline":
            self.svg, self.inside = a, True
        elif tag == "rect" and self.inside:
            self.rects.append(a)
    def handle_endtag(self, tag):
        if tag == "svg":
            self.inside = False

p = P()
p.feed(sys.stdin.read())
if p.svg is None:
    sys.exit(print("bad: no svg#timeline"))
W, H = float(p.svg.get("width", 0)), float(p.svg.get("height", 0))
bars = [r for r in p.rects if r.get("class", "").split()[0] == "bar"]
lanes = {}
for r in p.rects:
    x, y, w, h = (float(r[k]) for k in ("x", "y", "width", "height"))
    if not (w > 0 and h > 0 and x >= 0 and y >= 0 and x + w <= W and y + h <= H):
        sys.exit(print(f"bad: rect of {r.get('data-step')} outside the {W}x{H} svg: {x},{y} {w}x{h}"))
    lanes.setdefault(r["data-lane"], []).append((float(r["data-start"]), float(r["data-end"]), r["data-step"]))
for lane, spans in lanes.items():
    spans.sort()
    for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
        if s1 < e0 - 1e-6:
            sys.exit(print(f"bad: {n0} and {n1} overlap on lane {lane}"))
print(f"rendered={p.svg.get('data-rendered')} bars={len(bars)} "
      f"states={','.join(sorted(r['class'].split()[1] for r in bars))}")
PY
check_timeline() { python3 "$T/check_timeline.py" <<<"$DOM"; }

# The quickstart: four steps executed, drawn as four bars.
copy_quickstart "$T/q"
cd "$T/q"
run run pipeline.toml --format json
expect_eq "quickstart: 4 executed" "$(json "j['executed']")" 4
run report pipeline.toml --html "$T/q/out.html"
expect_eq "report: exit 0" "$RC" 0
dom "$T/q/out.html"
expect_eq "quickstart timeline" "$(check_timeline)" \
  "rendered=4 bars=4 states=executed,executed,executed,executed"
expect_contains "summary counts" "$DOM" '<span class="count" data-state="executed">4 executed</span>'
expect_eq "a table row per step" "$(grep -o '<tr class="executed"' <<<"$DOM" | wc -l)" 4

# A rerun: all cached, no bars, the cached steps named.
run run pipeline.toml --format json
run report pipeline.toml --html "$T/q/cached.html"
dom "$T/q/cached.html"
expect_eq "cached run: nothing drawn" "$(check_timeline)" "rendered=0 bars=0 states="
expect_contains "cached run: steps named" "$DOM" "Cached (not run this time): count-a, count-b"

# A failing step: drawn in the failed colour, its reason on hover and in the table.
mkdir "$T/f"
cat >"$T/f/pipeline.toml" <<'X'
[[step]]
name = "bad"
run = "exec >&2; echo starting; echo '<b>broken</b> & gone'; exit 3"
outputs = ["o"]
[[step]]
name = "after-bad"
inputs = { x = "@bad/o" }
run = "cat {in.x} > {out.o}"
outputs = ["o"]
[[step]]
name = "good"
run = "echo fine > {out.o}"
outputs = ["o"]
X
run run "$T/f/pipeline.toml"
expect_eq "failing run: exit 1" "$RC" 1
run report "$T/f/pipeline.toml" --html "$T/f/out.html"
dom "$T/f/out.html"
expect_eq "failing timeline" "$(check_timeline)" "rendered=2 bars=2 states=executed,failed"
expect_contains "failed bar: reason on hover" \
  "$(grep -o '<rect class="bar failed"[^>]*><title>[^<]*' <<<"$DOM")" "exited with status 3"
expect_contains "failed row: reason in the table" \
  "$(grep -o '<tr class="failed" data-step="bad">.*</tr>' <<<"$DOM")" "exited with status 3"
expect_contains "skipped row" "$(grep -o '<tr class="skipped" data-step="after-bad">' <<<"$DOM")" \
  "skipped"

# The failed step's log: its last lines under its row, escaped (no element made of
# them), and a link from every step that ran to its log, embedded in the page.
cat >"$T/check_logs.py" <<'PY'
import sys
from html.parser import HTMLParser

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.tails, self.links, self.sections, self.bold = [], {}, {}, {}, 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.stack.append((tag, a))
        if tag == "b":
            self.bold += 1
        if tag == "a" and a.get("class") == "log":
            row = next((x for t, x in reversed(self.stack) if t == "tr"), {})
            self.links[row.get("data-step")] = a.get("href")
    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass
    def handle_data(self, data):
        tags = [t for t, _ in self.stack]
        if "pre" not in tags:
            return
        for t, a in reversed(self.stack):
            if t == "tr" and a.get("class") == "log-tail":
                self.tails[a["data-step"]] = self.tails.get(a["data-step"], "") + data
                return
            if t == "section" and a.get("class") == "log":
                self.sections[a["id"]] = self.sections.get(a["id"], "") + data
                return

p = P()
p.feed(sys.stdin.read())
good_link = p.links.get("good")
bad_link = p.links.get("bad", "")
print(f"tail={p.tails.get('bad', '')!r} bold={p.bold} "
      f"links={sorted(k for k in p.links if k)} "
      f"bad_log={p.sections.get(bad_link.lstrip('#'), '')!r} "
      f"good_log={p.sections.get((good_link or '').lstrip('#'), '')!r}")
PY
expect_eq "failed step: last lines escaped, logs linked and embedded" \
  "$(python3 "$T/check_logs.py" <<<"$DOM")" \
  "tail='starting\\n<b>broken</b> & gone' bold=0 links=['bad', 'good'] bad_log='starting\\n<b>broken</b> & gone\\n' good_log=''"
finish
