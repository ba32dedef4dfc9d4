#!/usr/bin/env bash
# Times `berth run` against ninja, GNU make and snakemake on the same work: copying
# small files, as 10,000 independent steps (wide) and as a 2,000-step chain. For each
# tool and shape: a full run from a clean state (best of 2) and a no-op rerun (best of
# 3). Builds nothing.
#
#   bench/dag/run.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/release; its berth is timed. DAG_WIDE and DAG_CHAIN
# change the sizes (10000, 2000), DAG_JOBS the parallelism (nproc), DAG_TOOLS the tools
# ("berth ninja make snakemake"). Everything is written under a scratch directory in
# $TMPDIR (default /tmp), removed at the end. A missing tool is skipped with a message.
# Exit status: 1 when a tool failed, timed out or did not do the work (a MISMATCH
# line says which), else 0; the targets are informational.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
berth=$build/berth
if [[ ! -x $berth ]]; then
  echo "run.sh: $berth not found; build it first (cmake --build $build --target berth)" >&2
  exit 2
fi
berth=$(cd "$(dirname "$berth")" && pwd)/berth
wide=${DAG_WIDE:-10000}
chain=${DAG_CHAIN:-2000}
jobs=${DAG_JOBS:-$(nproc)}
tools=${DAG_TOOLS:-berth ninja make snakemake}
limit=${DAG_TIMEOUT:-600}          # seconds any one run may take
snake_cap=300                      # a snakemake full run longer than this is run at 1/10
scratch=$(mktemp -d "${TMPDIR:-/tmp}/berth-dag.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
status=0
results=()   # "shape phase tool wall cpu note"

# mismatch MESSAGE: says loudly that a run did not do what it should; remembered in a
# file because the checks run in subshells.
mismatch() { echo "MISMATCH: $*" | tee -a "$scratch/mismatches" >&2; }

# measure DIR CMD...: runs CMD in DIR (stdout to $scratch/out, stderr to $scratch/err)
# under `timeout`, and prints "WALL CPU": monotonic wall seconds and the user+sys
# seconds of CMD and every process it waited for. Fails if CMD does.
measure() {
  local dir=$1
  shift
  (cd "$dir" && python3 -c '
import resource, subprocess, sys, time
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.monotonic()
with open(sys.argv[1], "w") as out, open(sys.argv[2], "w") as err:
    rc = subprocess.call(sys.argv[3:], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
t1 = time.monotonic()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(f"{t1 - t0:.4f} {cpu:.4f}")
sys.exit(rc)' "$scratch/out" "$scratch/err" timeout -k 5 "$limit" "$@")
}

# The command each tool is run with, in the shape's directory.
tool_cmd() {
  case $1 in
    berth) echo "$berth run pipeline.toml --format json" ;;
    ninja) echo "ninja -j $jobs" ;;
    make) echo "make -j $jobs" ;;
    snakemake) echo "snakemake --cores $jobs" ;;
  esac
}
tool_present() {
  case $1 in
    berth) return 0 ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

# clean DIR: every tool's outputs and state gone; out/ exists (make does not make it).
clean() {
  rm -rf "$1/out" "$1/results" "$1/.berth" "$1/.ninja_log" "$1/.ninja_deps" "$1/.snakemake"
  mkdir "$1/out"
}

# check TOOL PHASE SHAPE N DIR: did the run just measured do all of the work (full) or
# none of it (noop)? Prints a MISMATCH line when not.
check() {
  local tool=$1 phase=$2 shape=$3 n=$4 dir=$5 last want
  last=$((n - 1))
  # The last step's output: wide copies "i", the chain carries step 0's "0" down.
  if [[ $shape == wide ]]; then want=$last; else want=0; fi
  if [[ $tool == berth ]]; then
    local counts
    counts=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["executed"], j["cached"], j["failed"])' "$scratch/out") ||
      { mismatch "berth $shape $phase: no JSON report"; return; }
    read -r ex ca fa <<<"$counts"
    if [[ $phase == full && ($ex != "$n" || $fa != 0) ]]; then
      mismatch "berth $shape full: executed $ex cached $ca failed $fa, want executed $n"
    elif [[ $phase == noop && ($ex != 0 || $ca != "$n") ]]; then
      mismatch "berth $shape noop: executed $ex cached $ca, want cached $n"
    fi
    local stem=w
    [[ $shape == chain ]] && stem=c
    [[ $(cat "$dir/results/$stem-$last/o" 2>/dev/null) == "$want" ]] ||
      mismatch "berth $shape $phase: results/$stem-$last/o is not '$want'"
    return
  fi
  local got
  got=$(find "$dir/out" -name '*.txt' | wc -l)
  [[ $got == "$n" ]] || mismatch "$tool $shape $phase: $got outputs, want $n"
  [[ $(cat "$dir/out/$last.txt" 2>/dev/null) == "$want" ]] ||
    mismatch "$tool $shape $phase: out/$last.txt is not '$want'"
  if [[ $phase == noop ]]; then
    local said=""
    case $tool in
      ninja) grep -q 'no work to do' "$scratch/out" && said=1 ;;
      make) grep -Eq 'Nothing to be done|is up to date' "$scratch/out" && ! grep -q '^cp ' "$scratch/out" && said=1 ;;
      snakemake) grep -q 'Nothing to be done' "$scratch/out" "$scratch/err" && said=1 ;;
    esac
    [[ -n $said ]] || mismatch "$tool $shape noop: it did not say it had nothing to do"
  fi
}

# best REPS PHASE TOOL SHAPE N DIR: the best wall time of REPS runs (a full run cleans
# first) and that run's CPU time, as "WALL CPU"; fails if any run fails.
best() {
  local reps=$1 phase=$2 tool=$3 shape=$4 n=$5 dir=$6 bw="" bc="" w c i
  local -a cmd
  read -r -a cmd <<<"$(tool_cmd "$tool")"
  for ((i = 0; i < reps; i++)); do
    [[ $phase == full ]] && clean "$dir"
    local wc
    if ! wc=$(measure "$dir" "${cmd[@]}"); then
      echo "  $tool $shape $phase failed; its stderr ends:" >&2
      tail -5 "$scratch/err" >&2
      return 1
    fi
    read -r w c <<<"$wc"
    check "$tool" "$phase" "$shape" "$n" "$dir"
    if [[ -z $bw ]] || awk -v a="$w" -v b="$bw" 'BEGIN { exit !(a < b) }'; then bw=$w bc=$c; fi
  done
  echo "$bw $bc"
}

run_shape() {
  local shape=$1 n=$2 dir=$scratch/$1 tool t note
  python3 "$root/bench/dag/gen.py" "$shape" "$n" "$dir"
  for tool in $tools; do
    if ! tool_present "$tool"; then
      echo "  skipped $tool: not on PATH (Debian: apt-get install ${tool/ninja/ninja-build})"
      continue
    fi
    # snakemake can take minutes on 10^4 jobs: a tenth first, the whole only if it fits.
    local size=$n sdir=$dir scale=1
    note=""
    if [[ $tool == snakemake ]]; then
      local small=$((n / 10)) probe
      python3 "$root/bench/dag/gen.py" "$shape" "$small" "$scratch/$shape-tenth"
      if probe=$(best 1 full snakemake "$shape" "$small" "$scratch/$shape-tenth"); then
        if awk -v t="${probe% *}" -v c="$snake_cap" 'BEGIN { exit !(t * 10 > c) }'; then
          size=$small sdir=$scratch/$shape-tenth scale=10
          note="(1/10 size: $small steps, time x10)"
        fi
      fi
    fi
    echo "  $shape: $tool ($size steps)..." >&2
    local full noop
    if ! full=$(best $([[ $tool == snakemake ]] && echo 1 || echo 2) full "$tool" "$shape" "$size" "$sdir"); then
      mismatch "$tool $shape full run failed"
      continue
    fi
    if ! noop=$(best 3 noop "$tool" "$shape" "$size" "$sdir"); then
      mismatch "$tool $shape no-op run failed"
      continue
    fi
    read -r fw fc <<<"$full"
    read -r nw nc <<<"$noop"
    results+=("$shape full $tool $(awk -v a="$fw" -v s=$scale 'BEGIN{print a*s}') $(awk -v a="$fc" -v s=$scale 'BEGIN{print a*s}') $note")
    results+=("$shape noop $tool $(awk -v a="$nw" -v s=$scale 'BEGIN{print a*s}') $(awk -v a="$nc" -v s=$scale 'BEGIN{print a*s}') $note")
    echo "  $shape $tool: full ${fw}s wall ${fc}s cpu, noop ${nw}s wall ${nc}s cpu $note" >&2
    clean "$sdir"
  done
}

echo "bench/dag: $berth, -j $jobs, wide $wide steps, chain $chain steps, scratch $scratch"
run_shape wide "$wide"
run_shape chain "$chain"

# The table, and berth's targets (full <= 1.2x ninja, no-op <= 2x ninja).
echo
printf '%-6s %-5s %-10s %10s %10s %9s\n' shape phase tool wall_s cpu_s "x ninja"
printf '%s\n' "${results[@]}" | awk '
  { key = $1 " " $2; row[NR] = $0; if ($3 == "ninja") ninja[key] = $4 }
  END {
    for (i = 1; i <= NR; i++) {
      nf = split(row[i], f, " "); key = f[1] " " f[2]
      note = row[i]; for (k = 1; k <= 5; k++) sub(/^[^ ]+ /, "", note); if (nf < 6) note = ""
      r = (key in ninja && ninja[key] > 0) ? sprintf("%9.2f", f[4] / ninja[key]) : "        -"
      printf "%-6s %-5s %-10s %10.3f %10.3f %s %s\n", f[1], f[2], f[3], f[4], f[5], r, note
    }
    print ""
    for (i = 1; i <= NR; i++) {
      split(row[i], f, " "); key = f[1] " " f[2]
      if (f[3] != "berth" || !(key in ninja)) continue
      want = f[2] == "full" ? 1.2 : 2.0
      r = f[4] / ninja[key]
      printf "target %-5s %-4s berth <= %.1fx ninja: %.2fx  %s\n", f[1], f[2], want, r,
        r <= want ? "PASS" : "MISS"
    }
  }'
[[ -s $scratch/mismatches ]] && status=1
exit $status
