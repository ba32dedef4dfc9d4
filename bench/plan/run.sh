#!/usr/bin/env bash
# Times `berth run --dry-run` — parsing, expanding, ordering and keying every step and
# saying why each would run, nothing executed — of pipelines of 10^4, 10^5 and 10^6
# steps, and prints each run's wall time and peak memory, and the 10^6 run's over the
# 10^5 one's: planning must grow linearly and stay small. Builds nothing.
#
#   bench/plan/run.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/release; its berth is timed. Two shapes, each one
# [[step]] table whose command uses its keys (so every key differs):
#   grid  foreach over two keys, a = 1,000 values and b = N/1,000 (10^6: 1,000 x 1,000)
#   flat  foreach over one key of N values (10^6: the most spec 04 §3.1 allows a table)
# PLAN_SIZES ("10000 100000 1000000") and PLAN_SHAPES ("grid flat") choose the runs.
# Each run is from a clean state (no .berth), under `timeout` (PLAN_TIMEOUT, 300 s), its
# stdout checked to say `would-run` once per step. Exit status: 1 when a run failed or
# said the wrong thing (a MISMATCH line), else 0; the targets are informational.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
berth=$build/berth
if [[ ! -x $berth ]]; then
  echo "run.sh: $berth not found; build it first (cmake --build $build --target berth)" >&2
  exit 2
fi
berth=$(cd "$(dirname "$berth")" && pwd)/berth
sizes=${PLAN_SIZES:-10000 100000 1000000}
shapes=${PLAN_SHAPES:-grid flat}
limit=${PLAN_TIMEOUT:-300}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/berth-plan.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
status=0
results=()  # "shape steps wall_s cpu_s rss_mib"

# gen SHAPE N DIR: DIR/pipeline.toml, one table of N steps.
gen() {
  mkdir -p "$3"
  python3 - "$1" "$2" "$3/pipeline.toml" <<'PY'
import sys
shape, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if shape == "grid":
    a = min(n, 1000)
    assert n % a == 0, "grid sizes are multiples of 1000"
    keys = {"a": a, "b": n // a}
    name, cmd = "s-{a}-{b}", "echo {a} {b} > {out.o}"
else:
    keys = {"i": n}
    name, cmd = "s-{i}", "echo {i} > {out.o}"
with open(path, "w") as f:
    f.write(f'[pipeline]\nname = "plan-{shape}"\n\n[[step]]\nname = "{name}"\n')
    f.write(f'run = "{cmd}"\noutputs = ["o"]\nparams = {{ scale = 2 }}\n\n[step.foreach]\n')
    for k, count in keys.items():
        f.write(f"{k} = [" + ", ".join(map(str, range(count))) + "]\n")
PY
}

# measure DIR CMD...: runs CMD in DIR (stdout to $scratch/out, stderr to $scratch/err)
# and prints "WALL CPU RSS_MIB": wall seconds, user+sys seconds and peak resident set
# of the process, from wait4(2). Fails if CMD does.
measure() {
  local dir=$1
  shift
  (cd "$dir" && python3 -c '
import os, sys, time
out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(out, 1); os.dup2(err, 2)
    fd = os.open("/dev/null", os.O_RDONLY); os.dup2(fd, 0)
    os.execvp(sys.argv[3], sys.argv[3:])
_, st, ru = os.wait4(pid, 0)
t1 = time.monotonic()
print(f"{t1 - t0:.3f} {ru.ru_utime + ru.ru_stime:.3f} {ru.ru_maxrss / 1024:.1f}")
sys.exit(os.waitstatus_to_exitcode(st))' "$scratch/out" "$scratch/err" timeout -k 5 "$limit" "$@")
}

echo "bench/plan: $berth --dry-run, scratch $scratch"
for shape in $shapes; do
  for n in $sizes; do
    dir=$scratch/$shape-$n
    gen "$shape" "$n" "$dir"
    echo "  $shape $n steps ($(du -h "$dir/pipeline.toml" | cut -f1) of TOML)..." >&2
    if ! m=$(measure "$dir" "$berth" run pipeline.toml --dry-run --host localhost:1); then
      echo "MISMATCH: $shape $n: berth failed; its stderr ends:" >&2
      tail -5 "$scratch/err" >&2
      status=1
      continue
    fi
    got=$(grep -c '^would-run ' "$scratch/out" || true)
    if [[ $got != "$n" ]]; then
      echo "MISMATCH: $shape $n: $got would-run lines, want $n" >&2
      status=1
    fi
    results+=("$shape $n $m")
    rm -rf "$dir"
  done
done

echo
printf '%-5s %9s %9s %9s %9s %12s %12s\n' shape steps wall_s cpu_s rss_mib "x prev wall" "x prev rss"
[[ ${#results[@]} -gt 0 ]] && printf '%s\n' "${results[@]}" | awk '
  {
    printf "%-5s %9d %9.3f %9.3f %9.1f", $1, $2, $3, $4, $5
    if ($1 == shape && pw > 0) printf " %12.2f %12.2f\n", $3 / pw, $5 / pr; else printf " %12s %12s\n", "-", "-"
    shape = $1; pw = $3; pr = $5
    if ($2 == 100000) { w5[$1] = $3; c5[$1] = $4 }
    if ($2 == 1000000) { w6[$1] = $3; c6[$1] = $4; r6[$1] = $5 }
  }
  END {
    print ""
    for (s in w6) {
      printf "target %-4s 10^6 wall < 5 s: %.2f s (cpu %.2f s)  %s\n", s, w6[s], c6[s],
        w6[s] < 5 ? "PASS" : "MISS"
      printf "target %-4s 10^6 peak < 1 GiB: %.0f MiB  %s\n", s, r6[s], r6[s] < 1024 ? "PASS" : "MISS"
      if (s in w5 && w5[s] > 0 && c5[s] > 0)
        printf "target %-4s 10^6 wall <= 12x 10^5: %.2fx (cpu %.2fx)  %s\n", s, w6[s] / w5[s],
          c6[s] / c5[s], w6[s] / w5[s] <= 12 ? "PASS" : "MISS"
    }
  }'
exit $status
