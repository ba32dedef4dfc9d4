#!/usr/bin/env bash
# The README's first example, run top to bottom as a new user would: every `$ berth`
# line of its first console block, read from README.md itself (so that the two cannot
# drift), in a folder holding a clean copy of examples/quickstart. Each command must
# succeed, and the HTML report it writes after an all-cached run must show the steps on
# its timelines — checked in headless Chromium, where the page's script draws them.
. "$(dirname "$0")/common.sh"
if ! command -v chromium >/dev/null 2>&1; then
  fail "chromium is not installed; this test needs it (Debian: apt-get install chromium)"
  finish
fi

mkdir -p "$T/w/examples"
copy_quickstart "$T/w/examples/quickstart"
cd "$T/w"

# The `$ berth ...` lines of the block under "## A first example", comments dropped.
python3 - "$BERTH_SOURCE_DIR/README.md" >"$T/commands" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## A first example", 1)[1]
block = section.split("```console", 1)[1].split("```", 1)[0]
for line in block.splitlines():
    if line.startswith("$ berth "):
        print(re.sub(r"\s+#.*$", "", line[2:]))
PY
expect_eq "the README's flow has its commands" "$(($(wc -l <"$T/commands") >= 10))" 1

n=0
while IFS= read -r line; do
  n=$((n + 1))
  set +e
  eval "\"\$BERTH\" ${line#berth }" >"$T/out.$n" 2>"$T/err.$n"
  rc=$?
  set -e
  if [[ $rc == 0 ]]; then
    ok "README step $n: $line"
  else
    fail "README step $n: $line: exit $rc: $(head -c 600 "$T/err.$n")"
  fi
done <"$T/commands"

# What the README says each shows.
expect_contains "the first run executes the four steps" "$(cat "$T/out.1")" "4 executed"
expect_contains "the second finds them all cached" "$(cat "$T/out.2")" "4 cached"
expect_contains "methods describes the four outputs" "$(cat "$T/out.5")" "The 4 output(s)"
log_step=$(grep -n '^berth log ' "$T/commands" | head -1 | cut -d: -f1)
expect_eq "berth log prints the step's output, not an error" "$(cat "$T/err.$log_step")" ""
runs_step=$(grep -n '^berth runs ' "$T/commands" | head -1 | cut -d: -f1)
expect_contains "berth runs lists the runs" "$(cat "$T/out.$runs_step")" "run(s) of"

# The page of the all-cached second run, drawn: its own timeline is empty (nothing ran),
# and the run that computed the steps is drawn below it with a bar per step.
[[ -s run.html ]] && ok "the README's page is written" || fail "no run.html"
dom "$T/w/run.html"
cat >"$T/bars.py" <<'PY'
import sys
from html.parser import HTMLParser

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg, self.bars = None, {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
            self.bars.setdefault(self.svg, [])
        elif tag == "rect" and self.svg and a.get("class", "").split()[0] == "bar":
            self.bars[self.svg].append(a.get("data-step"))
    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None

p = P()
p.feed(sys.stdin.read())
for svg, steps in sorted(p.bars.items()):
    print(svg, " ".join(sorted(steps)))
PY
python3 "$T/bars.py" <<<"$DOM" >"$T/bars"
expect_eq "the page's timelines hold the steps" "$(cat "$T/bars")" \
  "timeline 
timeline-earlier-0 count-a count-b count-c total"
finish
