#!/usr/bin/env bash
# Every subcommand's --help (and every store verb's) opens with a description, and
# every positional argument it lists has a help text: walked from `berth --help`'s
# subcommand list, so a subcommand added without either fails here.
. "$(dirname "$0")/common.sh"

PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$E2E" python3 - "$BERTH" >"$T/checks" 2>"$T/py.err" <<'PY' || fail "the checker itself failed: $(cat "$T/py.err")"
import functools
import re
import sys

import cli_help
from cli_help import block, say

berth = sys.argv[1]
helptext = functools.partial(cli_help.helptext, berth)


def column(text):
    """The column CLI11 starts help texts at: where -h,--help's begins."""
    for line in text.splitlines():
        m = re.match(r"(  -h,--help\s+)Print", line)
        if m:
            return len(m.group(1))
    raise SystemExit("no -h,--help line to find the help column by")


def entries(lines, col):
    """[(name, help)] of a block: an entry's line starts with two spaces; CLI11 pads
    the name to the help column, and puts the help on the next line, at that column,
    when the name is too wide for it."""
    out = []
    for i, line in enumerate(lines):
        if not re.match(r"  \S", line):
            continue
        help_text = ""
        if len(line) > col and line[col - 1] == " " and line[col] != " ":
            help_text = line[col:]
        elif i + 1 < len(lines) and lines[i + 1].startswith(" " * col):
            help_text = lines[i + 1].strip()
        out.append((line.split()[0], help_text))
    return out


def check(words):
    text = helptext(*words)
    name = "berth " + " ".join(words)
    first = text.splitlines()[0] if text.strip() else ""
    say(bool(first.strip()) and not first.startswith("Usage"),
        f"{name} --help opens with a description ({first[:60]!r})")
    col = column(text)
    positionals = entries(block(text, "Positionals:"), col)
    usage = next((l for l in text.splitlines() if l.startswith("Usage:")), "")
    for pos, help_text in positionals:
        say(bool(help_text.strip()), f"{name}: positional {pos} has a help text")
        say(pos in usage, f"{name}: positional {pos} is named in the usage line")
    subs = [n for n, _ in entries(block(text, "Subcommands:"), col)]
    for sub in subs:
        check(words + [sub])
    return subs


top = check([])
say(len(top) >= 9 and "run" in top and "store" in top,
    f"berth --help lists the subcommands ({' '.join(top)})")
PY
while IFS=$'\t' read -r verdict what; do
  if [[ $verdict == ok ]]; then ok "$what"; else fail "$what"; fi
done <"$T/checks"
[[ -s $T/checks ]] || fail "the checker said nothing"
finish
