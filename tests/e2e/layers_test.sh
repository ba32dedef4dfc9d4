#!/usr/bin/env bash
# The floors keep their rooms (docs/design.md): processes are started and reaped only in
# src/launch; below the CLI nothing prints, aborts, or reads or sets the process
# environment — errors and notices travel up as values — nor reads the time but through
# util/clock; no file in src/pipeline is over 700 lines, no function in src/ over 120. A
# scan of src/ (tests and test-support headers aside); each file still allowed an
# exception is listed with why,
# and the list may only shrink: a listed file that no longer needs it fails too, so
# that it is taken off.
. "$(dirname "$0")/common.sh"
SRC=$BERTH_SOURCE_DIR/src

production() {
  find "$SRC" \( -name '*.cc' -o -name '*.h' \) ! -name '*_test.cc' ! -name '*for_test.h' \
    ! -name 'testing.h' | sort
}

# lines FILE REGEX: the file's lines matching, comments left out.
lines() {
  sed -E 's://.*$::' "$1" | grep -nE "$2" || true
}

# 1. Processes: started and reaped in src/launch only.
spawn_re='\b(fork|vfork|posix_spawnp?|waitpid|waitid|wait4|execv[pe]*|execl[pe]*|clone3?|popen|system)[[:space:]]*\('
found=""
while read -r f; do
  case $f in "$SRC"/launch/*) continue ;; esac
  hits=$(lines "$f" "$spawn_re" | grep -vE '::(signal|system_clock)|std::system_clock|system_error|filesystem' || true)
  [ -n "$hits" ] && found+="${f#"$SRC"/}: $(head -1 <<<"$hits")"$'\n'
done < <(production)
expect_eq "processes are started and reaped only in src/launch" "$found" ""

# 2. Below the CLI: no printing, aborting, or process environment.
io_re='\b(printf|fprintf|puts|fputs|perror|abort|getenv|secure_getenv|setenv|unsetenv|putenv)[[:space:]]*\(|std::(cout|cerr|clog)\b|\benviron\b'
# The exceptions still allowed, and why. Each is a debt: take it off when it is paid.
declare -A allowed=(
  [util/env.cc]="the one place the process environment is read (Env::from_process) and set (for hwloc)"
  [util/libcrypto.cc]="a digest reached without libcrypto stops the process (Python asks load_libcrypto() first and refuses to import)"
)
found=""
while read -r f; do
  rel=${f#"$SRC"/}
  case $rel in cli/*) continue ;; esac
  hits=$(lines "$f" "$io_re")
  if [ -n "${allowed[$rel]+x}" ]; then
    [ -z "$hits" ] && found+="$rel: listed as allowed (${allowed[$rel]}) but no longer needs it: take it off the list"$'\n'
    continue
  fi
  [ -n "$hits" ] && found+="$rel: $(head -1 <<<"$hits")"$'\n'
done < <(production)
expect_eq "below the CLI nothing prints, aborts or touches the process environment" "$found" ""
# 3. No production file in src/pipeline over 700 lines.
found=""
for f in "$SRC"/pipeline/*.cc; do
  case $f in *_test.cc) continue ;; esac
  n=$(wc -l <"$f")
  ((n > 700)) && found+="pipeline/$(basename "$f"): $n lines (at most 700)"$'\n'
done
expect_eq "src/pipeline files stay small" "$found" ""

# 4. No function in src/ over 120 lines. A function is a line at namespace or class level
# that has a '(' and opens a body ('{' at the end of it or of one of the next few lines),
# up to the '}' at its own indentation: the house style (clang-format) lays every
# function out so.
longest() {
  python3 - "$SRC" 120 <<'PY'
import pathlib, re, sys
root, limit = pathlib.Path(sys.argv[1]), int(sys.argv[2])
not_a_function = re.compile(
    r'^\s*(if|for|while|switch|return|else|do|case|namespace|struct|class|enum|union|extern)\b')
for f in sorted(list(root.rglob('*.cc')) + list(root.rglob('*.h'))):
    if f.name.endswith(('_test.cc', 'for_test.h')) or f.name == 'testing.h':
        continue
    lines = f.read_text(errors='replace').split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r'^( {0,2})\S', line)
        if (m and '(' in line and not not_a_function.match(line)
                and not line.lstrip().startswith(('//', '#', '}'))):
            j = i
            while j < len(lines) and j - i < 6 and not lines[j].rstrip().endswith(('{', ';')):
                j += 1
            if j < len(lines) and j - i < 6 and lines[j].rstrip().endswith('{'):
                close = re.compile('^' + m.group(1) + r'\}')
                k = j + 1
                while k < len(lines) and not close.match(lines[k]):
                    k += 1
                if k - i + 1 > limit:
                    print(f"{f.relative_to(root)}:{i + 1}: {k - i + 1} lines: {line.strip()[:60]}")
                i = k
        i += 1
PY
}
expect_eq "no function in src/ is over 120 lines" "$(longest)" ""

# 5. No clock read below the CLI but through util/clock (Clock::real() and the fakes):
# time is a seam, so that tests drive it.
clock_re='\b(steady_clock|system_clock|high_resolution_clock)::now[[:space:]]*\(|\b(clock_gettime|gettimeofday)[[:space:]]*\(|\btime[[:space:]]*\((nullptr|NULL|0|&)'
found=""
while read -r f; do
  rel=${f#"$SRC"/}
  case $rel in cli/* | util/clock.cc) continue ;; esac
  hits=$(lines "$f" "$clock_re")
  [ -n "$hits" ] && found+="$rel: $(head -1 <<<"$hits")"$'\n'
done < <(production)
expect_eq "below the CLI the time is read only through util/clock" "$found" ""
expect_eq "the scan read the sources" "$(production | wc -l | tr -d ' ' | awk '{print ($1 > 200)}')" 1
finish
