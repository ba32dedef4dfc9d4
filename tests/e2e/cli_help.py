"""Reading berth's --help as CLI11 lays it out, for the e2e tests that check every
subcommand's help (help_test.sh) and that the man page and completion match it
(manpage_test.sh): one reader, so that both read the same text the same way."""

import subprocess


def say(good, what):
    """One check's line: "ok" or "fail", a tab, what was checked."""
    print(("ok" if good else "fail") + "\t" + what)


def helptext(berth, *words):
    """`berth WORDS... --help`'s output; the checker stops when it does not exit 0."""
    r = subprocess.run([berth, *words, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"berth {' '.join(words)} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


def block(text, title):
    """The lines of a CLI11 help block ('Options:', 'Positionals:', 'Subcommands:')."""
    out, inside = [], False
    for line in text.splitlines():
        if line.strip() == title:
            inside = True
        elif inside and line and not line.startswith(" "):
            break
        elif inside and line.strip():
            out.append(line)
    return out
