#!/usr/bin/env bash
# The repository is self-contained: no script, test, benchmark, CI or CMake file reaches
# a path outside it, so a fresh clone builds, starts its services and tests on its own.
# Checked in every such file git knows (tracked, or new and not ignored):
#   - names of the old folder beside the checkout, or the variable that pointed at it;
#   - a path that climbs above the repository root: from the script's own folder (its
#     dirname, CMAKE_CURRENT_SOURCE_DIR), from the root (ROOT, BERTH_SOURCE_DIR,
#     PROJECT_SOURCE_DIR) or from a variable the file, or a file it sources, sets to one
#     of those, counting the climbs against how deep the file sits;
#   - a symbolic link (anywhere in the repository) whose target is outside it.
# The patterns are assembled from pieces, so this file does not match them itself.
. "$(dirname "$0")/common.sh"

if ! python3 - "$BERTH_SOURCE_DIR" >"$T/found" 2>"$T/scan.err" <<'PY'; then
import os
import re
import subprocess
import sys

root = os.path.realpath(sys.argv[1])


def listed():
    """Files git knows: tracked, plus untracked ones it does not ignore."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True).stdout.decode()
        return sorted({p for p in out.split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        found = []  # not a git checkout (an unpacked archive): walk it
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and not (d == root and x.startswith("build"))]
            found += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return sorted(found)


def wanted(p):
    top, base = p.split("/")[0], os.path.basename(p)
    if "/corpus/" in p:  # fuzzer inputs are data, not paths
        return False
    return (top in ("scripts", "tests", ".ci", "bench") or base == "CMakeLists.txt"
            or base.endswith(".cmake") or p == "CMakePresets.json")


old = "sha" + "red"
NAMES = [
    (re.compile(r"\.\./+" + old + r"(?![\w.-])"), "names the folder beside the repository"),
    (re.compile(r"\bBERTH_" + old.upper() + r"\b"), "uses the variable for the folder beside the repository"),
    (re.compile(r"/work/+" + old + r"(?![\w.-])"), "names an absolute folder outside the repository"),
]

# Where a path starts: the file's own folder, or a variable (depth looked up).
SELF = (r"\$\(\s*dirname\s+(?:--\s+)?\"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)\"?\s*\)"
        r"|\$\{(?:BASH_SOURCE(?:\[0\])?|0)%/\*\}"
        r"|\$\{CMAKE_CURRENT_(?:SOURCE|LIST)_DIR\}")
VAR = r"\$\{(\w+)\}|\$(\w+)"
ANCHORED = re.compile(r"(?:(?P<self>" + SELF + r")|" + VAR + r")\"?(?P<tail>(?:/+[^/\s\"'`);|&:}]*)*)")
ROOTS = {"BERTH_SOURCE_DIR": 0, "PROJECT_SOURCE_DIR": 0, "CMAKE_SOURCE_DIR": 0, "ROOT": 0}
DEFINE = re.compile(r"^\s*(?:(?:local|export|readonly)\s+)?(\w+)=(.*)$|^\s*set\(\s*(\w+)\s+(.*)$")
SOURCE = re.compile(r"^\s*(?:\.|source)\s+(\S.*?)\s*(?:[;#].*)?$")


def walk(level, tail):
    """The depth the tail ends at, or None when it climbs above the root on the way."""
    for c in tail.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            level -= 1
            if level < 0:
                return None
        else:
            level += 1
    return level


def anchors(line, depth, vars_):
    """(text, end depth or None) for each anchored path on the line whose start is known."""
    for m in ANCHORED.finditer(line):
        if m.group("self"):
            start = depth
        else:
            name = m.group(2) or m.group(3)
            start = vars_.get(name, ROOTS.get(name))
            if start is None:
                continue
        yield m.group(0), walk(start, m.group("tail"))


def read(p):
    try:
        with open(os.path.join(root, p), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", "replace").splitlines()


paths = listed()
texts = {}
for p in paths:
    full = os.path.join(root, p)
    if os.path.islink(full):
        target = os.path.realpath(full)
        if target != root and not target.startswith(root + os.sep):
            print(f"link\t{p}\tlinks to {os.readlink(full)}, outside the repository")
        continue
    if wanted(p):
        lines = read(p)
        if lines is not None:
            texts[p] = lines


def definitions(p):
    """Variables the file sets to a folder of known depth (None where it sets two)."""
    depth = p.count("/")
    found = {}
    for line in texts[p]:
        m = DEFINE.match(line)
        if not m:
            continue
        name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        for _, end in anchors(value, depth, found):
            if end is not None:
                found[name] = end if found.get(name, end) == end else None
            break
    return found


defs = {p: definitions(p) for p in texts}
for p, lines in texts.items():
    depth = p.count("/")
    vars_ = {}
    for line in lines:  # what the files it sources set, looked for beside it
        m = SOURCE.match(line)
        if m:
            name = m.group(1).rsplit("/", 1)[-1].strip("\"'")
            near = os.path.normpath(os.path.join(os.path.dirname(p), name))
            vars_.update({k: v for k, v in defs.get(near, {}).items() if v is not None})
    vars_.update({k: v for k, v in defs[p].items() if v is not None})
    for n, line in enumerate(lines, 1):
        where = f"{p}:{n}"
        for rx, why in NAMES:
            if rx.search(line):
                print(f"name\t{where}\t{why}: {line.strip()[:160]}")
        for text, end in anchors(line, depth, vars_):
            if end is None:
                print(f"climb\t{where}\tclimbs above the repository root ({text}): {line.strip()[:160]}")
print(f"scanned\t{len(texts)}\t" + " ".join(sorted(texts)))
PY
  fail "the scan itself failed: $(cat "$T/scan.err")"
  finish
fi

scanned=$(awk -F'\t' '$1 == "scanned" { print $2 }' "$T/found")
files=$(awk -F'\t' '$1 == "scanned" { print $3 }' "$T/found")
expect_eq "the scan read the scripts and CMake files" \
  "$([[ ${scanned:-0} -gt 10 && " $files " == *" scripts/services.sh "* && " $files " == *" CMakeLists.txt "* ]] && echo yes)" yes

# check KIND WHAT: one assertion per kind of finding; each finding is listed.
check() {
  local kind=$1 what=$2 hits
  hits=$(awk -F'\t' -v k="$kind" '$1 == k { print "  " $2 ": " $3 }' "$T/found")
  if [[ -z $hits ]]; then
    ok "$what"
  else
    fail "$what:"$'\n'"$hits"
  fi
}
check name "no file names a folder beside the repository"
check climb "no path climbs above the repository root"
check link "no symbolic link leads out of the repository"
finish
