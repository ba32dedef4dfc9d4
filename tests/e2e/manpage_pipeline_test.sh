#!/usr/bin/env bash
# The pipeline file's man page (docs/berth-pipeline.5) renders without a warning and
# names every key the parser accepts, so that a key added to the reader without a word
# on the page fails here:
#   - every top-level table, every [[step]] key and every [defaults] key that
#     src/pipeline/pipeline_file.cc accepts is a tag (.TP, then .B KEY) or named in the
#     [DEFAULTS] section;
#   - the page says it describes docs/spec/04-pipeline.md, which stays the authority.
. "$(dirname "$0")/common.sh"

PAGE=$BERTH_SOURCE_DIR/docs/berth-pipeline.5
PARSER=$BERTH_SOURCE_DIR/src/pipeline/pipeline_file.cc

# --- It renders, without a warning.
warnings=$(MANWIDTH=80 man --warnings -l "$PAGE" 2>&1 >/dev/null) || warnings+=" (man exited $?)"
expect_eq "man --warnings -l renders the pipeline page without a warning" "$warnings" ""
if command -v groff >/dev/null; then
  warnings=$(groff -man -ww -z "$PAGE" 2>&1) || warnings+=" (groff exited $?)"
  expect_eq "groff -man -ww finds nothing to warn about in the pipeline page" "$warnings" ""
fi
rendered=$(MANWIDTH=80 man -P cat -l "$PAGE" 2>/dev/null)
expect_contains "the rendered page has its name line" "$rendered" \
  "berth-pipeline - the pipeline file that berth run reads"

# --- The keys, read from the parser's own lists.
python3 - "$PAGE" "$PARSER" >"$T/checks" 2>"$T/py.err" <<'PY' || fail "the checker itself failed: $(cat "$T/py.err")"
import re
import sys

page_path, parser_path = sys.argv[1:3]
page = open(page_path, encoding="utf-8").read().splitlines()
parser = open(parser_path, encoding="utf-8").read()


def say(good, what):
    print(("ok" if good else "fail") + "\t" + what)


def keys(name):
    """The strings of `const std::vector<std::string_view> NAME = {...};`."""
    m = re.search(name + r"\s*=\s*\{(.*?)\};", parser, re.S)
    if not m:
        raise SystemExit(f"{name} not found in {parser_path}")
    return re.findall(r'"([^"]+)"', m.group(1))


def section(title):
    out, inside = [], False
    for line in page:
        m = re.match(r'\.SH\s+"?(.*?)"?\s*$', line)
        if m:
            inside = m.group(1) == title
            continue
        if inside:
            out.append(line)
    return out


def tags(lines):
    """The key on every tag line: .TP followed by .B KEY."""
    out, want = set(), False
    for line in lines:
        if want:
            m = re.match(r"\.B\s+(\S+)\s*$", line)
            if m:
                out.add(m.group(1).replace("\\-", "-"))
        want = line.strip() == ".TP"
    return out


step_keys, default_keys = keys("kStepKeys"), keys("kDefaultKeys")
say(len(step_keys) > 10 and "run" in step_keys, f"the parser's step keys were read ({len(step_keys)})")
step_tags = tags(section("[[STEP]]"))
for k in step_keys:
    say(k in step_tags, f"[[step]] key {k} has a tag in [[STEP]]")
for k in sorted(step_tags - set(step_keys)):
    say(False, f"[[STEP]] tags {k}, which the parser does not accept")
named = {m.group(1) for line in section("[DEFAULTS]")
         for m in [re.match(r"\.BR?\s+(\S+)", line)] if m}
for k in default_keys:
    say(k in named, f"[defaults] key {k} is named in [DEFAULTS]")
# The top level: the tables the file-level reader finishes with.
m = re.search(r'f\.finish\(\{("pipeline"[^}]*)\}\)', parser)
top = re.findall(r'"([^"]+)"', m.group(1)) if m else []
say(len(top) == 5, f"the parser's top-level keys were read ({' '.join(top)})")
desc = "\n".join(section("DESCRIPTION"))
for k in top:
    say(f".B {k}\n" in desc + "\n" or f".BR {k} " in desc, f"top-level key {k} is named in DESCRIPTION")
say("docs/spec/04\\-pipeline.md" in "\n".join(page), "the page names the spec it summarises")
PY
while IFS=$'\t' read -r verdict what; do
  if [[ $verdict == ok ]]; then ok "$what"; else fail "$what"; fi
done <"$T/checks"
finish
