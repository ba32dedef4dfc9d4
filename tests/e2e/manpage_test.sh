#!/usr/bin/env bash
# The man page (docs/berth.1) and the bash completion (scripts/completion/berth.bash)
# say what the binary does, in both directions, so neither can drift from it:
#   - every subcommand in `berth --help` has a section `.SH "BERTH SUB"`, and every such
#     section is a subcommand; `berth store`'s verbs likewise, as `.SS "berth store VERB"`;
#   - every option `berth SUB --help` lists (short and long; -h/--help, which every
#     subcommand has, is said once in DESCRIPTION) is on a .TP tag line of that section,
#     every option on a tag line there is in `--help`, and every value an option is
#     limited to ({text,json}) is on its tag line;
#   - the page's version is the project's, and the page renders without a warning;
#   - the completion offers exactly the subcommands, the store verbs, each one's
#     options and each limited option's values that `--help` lists.
. "$(dirname "$0")/common.sh"

PAGE=$BERTH_SOURCE_DIR/docs/berth.1
COMPLETION=$BERTH_SOURCE_DIR/scripts/completion/berth.bash

# --- It renders, without a warning.
warnings=$(MANWIDTH=80 man -l "$PAGE" 2>&1 >/dev/null) || warnings+=" (man exited $?)"
expect_eq "man -l renders the page without a warning" "$warnings" ""
warnings=$(MANWIDTH=80 man --warnings -l "$PAGE" 2>&1 >/dev/null) || warnings+=" (man exited $?)"
expect_eq "man --warnings -l renders the page without a warning" "$warnings" ""
if command -v groff >/dev/null; then
  warnings=$(groff -man -ww -z "$PAGE" 2>&1) || warnings+=" (groff exited $?)"
  expect_eq "groff -man -ww finds nothing to warn about" "$warnings" ""
fi
rendered=$(MANWIDTH=80 man -P cat -l "$PAGE" 2>/dev/null)
expect_contains "the rendered page has the launch section" "$rendered" "BERTH LAUNCH"

# --- The page against --help, and the completion against --help. One line per
# assertion: "ok<TAB>what" or "fail<TAB>what".
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$E2E" python3 - "$BERTH" "$PAGE" "$COMPLETION" "$BERTH_SOURCE_DIR/CMakeLists.txt" >"$T/checks" 2>"$T/py.err" <<'PY' || fail "the checker itself failed: $(cat "$T/py.err")"
import functools
import re
import subprocess
import sys

import cli_help
from cli_help import block, say

berth, page_path, completion, cmakelists = sys.argv[1:5]
EXEMPT = {"-h", "--help"}  # every subcommand's; DESCRIPTION says so once
helptext = functools.partial(cli_help.helptext, berth)


def same(what, got, want):
    """One assertion that two sets are equal, naming the difference."""
    missing, extra = sorted(want - got), sorted(got - want)
    detail = "".join([f"; missing {' '.join(missing)}" if missing else "",
                      f"; not in --help: {' '.join(extra)}" if extra else ""])
    say(not missing and not extra, what + detail)


def subcommands(text):
    return [l.split()[0] for l in block(text, "Subcommands:") if l.startswith("  ") and not l.startswith("   ")]


def options(text):
    """{option name: [allowed values] or None}; -n,--np gives two names."""
    out = {}
    for line in block(text, "Options:"):
        m = re.match(r"\s+(-[^\s]+)(.*)", line)
        if not m:
            continue
        values = re.search(r"^\s*\w+:\{([^}]*)\}", m.group(2))
        for name in m.group(1).split(","):
            out[name] = values.group(1).split(",") if values else None
    return out


# --- The page, as roff: its sections, and the tag lines of each.
page = open(page_path, encoding="utf-8").read().splitlines()


def plain(line):
    """A roff line as text: macro names, font changes and escapes gone."""
    line = re.sub(r"^\.[A-Z]{1,2}\s", "", line)
    line = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", line)
    line = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\&", "").replace("\\e", "\\")
    return line.replace('"', "")


def sections(level):
    """{lower-case title: [lines]} for every .SH (level SH) or .SS (level SS)."""
    out, title = {}, None
    for line in page:
        m = re.match(r"\.(SH|SS)\s+\"?(.*?)\"?\s*$", line)
        if m and (m.group(1) == level or m.group(1) == "SH"):
            title = m.group(2).lower() if m.group(1) == level else None
            if title is not None:
                out[title] = []
            continue
        if title is not None:
            out[title].append(line)
    return out


def tags(lines):
    """The text of every .TP tag line (the line after .TP, comments skipped)."""
    out, want = [], False
    for line in lines:
        if line.startswith('.\\"'):
            continue
        if want:
            out.append(plain(line))
            want = False
        want = line.strip() == ".TP"
    return out


OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*|-[A-Za-z])(?![\w-])")


def listed(lines):
    """{option: its tag line} for every option on a tag line."""
    out = {}
    for tag in tags(lines):
        for name in OPTION.findall(tag):
            out[name] = tag
    return out


def check_section(what, lines, helpopts):
    """Both directions between a section's tag lines and --help, and the values."""
    if lines is None:
        say(False, f"the man page has a section for {what}")
        return
    say(True, f"the man page has a section for {what}")
    onpage = listed(lines)
    same(f"{what}: the man page lists the options --help lists",
         set(onpage), set(helpopts) - EXEMPT)
    for name, values in sorted(helpopts.items()):
        if values and name in onpage:
            absent = [v for v in values
                      if not re.search(r"(?<![\w-])" + re.escape(v) + r"(?![\w-])", onpage[name])]
            say(not absent, f"{what}: the man page gives {name}'s values {'|'.join(values)}"
                + (f"; missing {' '.join(absent)}" if absent else ""))


# --- The completion, asked the way bash asks it.
def complete(*words):
    script = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _berth; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", completion, "berth", *words],
                       capture_output=True, text=True, cwd="/")
    return {w for w in r.stdout.split("\n") if w}


def check_completion(what, words, helpopts):
    same(f"{what}: the completion offers the options --help lists",
         complete(*words, "-"), set(helpopts))
    for name, values in sorted(helpopts.items()):
        if values:
            same(f"{what}: the completion offers {name}'s values", complete(*words, name, ""),
                 set(values))


# The version on the page is the project's.
version = re.search(r"project\(berth VERSION ([0-9.]+)", open(cmakelists).read()).group(1)
th = next((l for l in page if l.startswith(".TH ")), "")
say(f'"berth {version}"' in th, f"the page's .TH names berth {version}: {th}")

top = helptext()
subs = subcommands(top)
say(len(subs) >= 8, f"berth --help lists the subcommands ({' '.join(subs)})")
shs = sections("SH")
same("every BERTH section of the man page is a subcommand",
     {t for t in shs if t.startswith("berth ")}, {f"berth {s}" for s in subs})
same("the completion offers the subcommands --help lists", complete(""), set(subs))
same("the completion offers berth's own options", complete("-"), set(options(top)))

sss = sections("SS")
for sub in subs:
    text = helptext(sub)
    verbs = subcommands(text)
    lines = shs.get(f"berth {sub}")
    if verbs:
        # berth store: its own options before the first .SS, then one .SS per verb.
        head = None
        if lines is not None:
            head = []
            for line in lines:
                if line.startswith(".SS"):
                    break
                head.append(line)
        check_section(f"berth {sub}", head, options(text))
        same(f"every 'berth {sub} VERB' subsection is a verb of berth {sub}",
             {t for t in sss if t.startswith(f"berth {sub} ")}, {f"berth {sub} {v}" for v in verbs})
        same(f"the completion offers berth {sub}'s verbs", complete(sub, ""), set(verbs))
        for verb in verbs:
            vtext = helptext(sub, verb)
            check_section(f"berth {sub} {verb}", sss.get(f"berth {sub} {verb}"), options(vtext))
            check_completion(f"berth {sub} {verb}", [sub, verb], options(vtext))
    else:
        check_section(f"berth {sub}", lines, options(text))
        check_completion(f"berth {sub}", [sub], options(text))
PY

while IFS=$'\t' read -r verdict what; do
  if [[ $verdict == ok ]]; then ok "$what"; else fail "$what"; fi
done <"$T/checks"
expect_eq "the checker made its assertions" "$(($(grep -c '' "$T/checks") > 40))" 1

# --- The completion file is a completion for berth.
expect_eq "sourced, the completion completes berth" \
  "$(bash --norc --noprofile -c '. "$1" && complete -p berth' bash "$COMPLETION" 2>&1)" \
  "complete -F _berth berth"
finish
