#!/usr/bin/env bash
# Times `berth run` against ninja and GNU make (and snakemake, when installed) on the
# same work, side by side in one run:
#   touch  10,000 independent steps, each touching its own output (no input);
#   read   10,000 independent steps, each copying an input of its own;
#   chain  2,000 steps, each copying the one before (informational).
# For each tool and shape, the median of several runs (a shared machine is noisy), the
# tools taking turns run by run, each in a copy of the shape of its own:
#   full    a run from a clean state (DAG_REPS_FULL runs, 3);
#   noop1   the first rerun right after a full run, nothing changed (DAG_REPS_FULL);
#   noop    later reruns (DAG_REPS, 5);
#   edit    one step made to run again (read: one input's bytes; touch: one step's
#           definition; edit.py), then a rerun (DAG_REPS, a different step each time).
# Wall time is what the targets compare; CPU time (user + system, the tool and every
# process it waited for) is printed beside it. Builds nothing.
#
#   bench/dag/run.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/release; its berth is timed. DAG_TOUCH, DAG_READ and
# DAG_CHAIN change the sizes (10000, 10000, 2000; 0 leaves a shape out), DAG_JOBS the
# parallelism (nproc), DAG_TOOLS the tools ("berth ninja make snakemake"). Everything
# is written under a scratch directory in $TMPDIR (default /tmp), removed at the end. A
# missing tool is skipped with a message. Exit status: 1 when a tool failed, timed out
# or did not do the work (a MISMATCH line says which), else 0; the targets (full <=
# 1.1x ninja, first no-op <= 2x, edit-one <= 2x) are informational.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
berth=$build/berth
if [[ ! -x $berth ]]; then
  echo "run.sh: $berth not found; build it first (cmake --build $build --target berth)" >&2
  exit 2
fi
berth=$(cd "$(dirname "$berth")" && pwd)/berth
touch_n=${DAG_TOUCH:-10000}
read_n=${DAG_READ:-${DAG_WIDE:-10000}}
chain=${DAG_CHAIN:-2000}
jobs=${DAG_JOBS:-$(nproc)}
tools=${DAG_TOOLS:-berth ninja make snakemake}
limit=${DAG_TIMEOUT:-600}          # seconds any one run may take
reps_slow=${DAG_REPS_FULL:-3}      # runs of full and noop1 (each noop1 after a full run)
reps_fast=${DAG_REPS:-5}           # runs of noop and edit
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
    berth) echo "$berth run pipeline.toml" ;;
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
  # The last step's output: read copies "i", the chain carries step 0's "0" down,
  # touch makes it empty.
  case $shape in
    read) want=$last ;;
    touch) want="" ;;
    *) want=0 ;;
  esac
  if [[ $tool == berth ]]; then
    # Its summary line, the last of its default output (the JSON report is a file of
    # megabytes beside the pipeline; printing it too would time a copy no user asks for).
    local counts
    counts=$(sed -nE 's/^[0-9]+ step\(s\): ([0-9]+) executed, ([0-9]+) cached, ([0-9]+) failed.*/\1 \2 \3/p' "$scratch/out" | tail -1)
    [[ -n $counts ]] || { mismatch "berth $shape $phase: no summary line"; return; }
    read -r ex ca fa <<<"$counts"
    if [[ $phase == full && ($ex != "$n" || $fa != 0) ]]; then
      mismatch "berth $shape full: executed $ex cached $ca failed $fa, want executed $n"
    elif [[ $phase == noop* && ($ex != 0 || $ca != "$n") ]]; then
      mismatch "berth $shape $phase: executed $ex cached $ca, want cached $n"
    elif [[ $phase == edit && ($ex != 1 || $fa != 0) ]]; then
      mismatch "berth $shape edit: executed $ex cached $ca failed $fa, want executed 1"
    fi
    local stem=w
    [[ $shape == chain ]] && stem=c
    [[ $shape == touch ]] && stem=t
    [[ $(cat "$dir/results/$stem-$last/o" 2>/dev/null) == "$want" ]] ||
      mismatch "berth $shape $phase: results/$stem-$last/o is not '$want'"
    return
  fi
  local got
  got=$(find "$dir/out" -name '*.txt' | wc -l)
  [[ $got == "$n" ]] || mismatch "$tool $shape $phase: $got outputs, want $n"
  [[ $(cat "$dir/out/$last.txt" 2>/dev/null) == "$want" ]] ||
    mismatch "$tool $shape $phase: out/$last.txt is not '$want'"
  if [[ $phase == noop* ]]; then
    local said=""
    case $tool in
      ninja) grep -q 'no work to do' "$scratch/out" && said=1 ;;
      make) grep -Eq 'Nothing to be done|is up to date' "$scratch/out" && ! grep -q '^cp ' "$scratch/out" && said=1 ;;
      snakemake) grep -q 'Nothing to be done' "$scratch/out" "$scratch/err" && said=1 ;;
    esac
    [[ -n $said ]] || mismatch "$tool $shape noop: it did not say it had nothing to do"
  fi
}

# once PHASE TOOL SHAPE N DIR REP: readies DIR for one run of PHASE and times it,
# printing "WALL CPU"; fails if the run does. Before it: full cleans; noop1 cleans and
# runs a full run, untimed; edit makes step (REP+1)*7 need to run again.
once() {
  local phase=$1 tool=$2 shape=$3 n=$4 dir=$5 rep=$6 wc
  local -a cmd
  read -r -a cmd <<<"$(tool_cmd "$tool")"
  case $phase in
    full) clean "$dir" ;;
    noop1)
      clean "$dir"
      measure "$dir" "${cmd[@]}" >/dev/null || return 1
      ;;
    edit) python3 "$root/bench/dag/edit.py" "$shape" $(((rep + 1) * 7 % n)) "$dir" ;;
  esac
  if ! wc=$(measure "$dir" "${cmd[@]}"); then
    echo "  $tool $shape $phase failed; its stderr ends:" >&2
    tail -5 "$scratch/err" >&2
    return 1
  fi
  check "$tool" "$phase" "$shape" "$n" "$dir"
  echo "$wc"
}

# median: the median of the numbers on stdin.
median() {
  sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# run_shape SHAPE N: every phase of SHAPE for every tool, each tool in a copy of the
# shape of its own; the tools take turns run by run, so that a machine whose load
# drifts weighs on all of them alike.
run_shape() {
  local shape=$1 n=$2 base=$scratch/$1 tool
  python3 "$root/bench/dag/gen.py" "$shape" "$n" "$base"
  local -a present=()
  local -A size=() dir=() scale=() note=()
  for tool in $tools; do
    if ! tool_present "$tool"; then
      echo "  skipped $tool: not on PATH (Debian: apt-get install ${tool/ninja/ninja-build})"
      continue
    fi
    size[$tool]=$n
    scale[$tool]=1
    note[$tool]=""
    dir[$tool]=$scratch/$shape.$tool
    cp -a "$base" "${dir[$tool]}"
    # snakemake can take minutes on 10^4 jobs: a tenth first, the whole only if it fits.
    if [[ $tool == snakemake ]]; then
      local small=$((n / 10)) probe
      python3 "$root/bench/dag/gen.py" "$shape" "$small" "$scratch/$shape-tenth"
      if probe=$(once full snakemake "$shape" "$small" "$scratch/$shape-tenth" 0); then
        if awk -v t="${probe% *}" -v c="$snake_cap" 'BEGIN { exit !(t * 10 > c) }'; then
          size[$tool]=$small dir[$tool]=$scratch/$shape-tenth scale[$tool]=10
          note[$tool]="(1/10 size: $small steps, time x10)"
        fi
      fi
    fi
    present+=("$tool")
  done
  local phases="full noop1 noop" ph reps i got
  [[ $shape != chain ]] && phases+=" edit"
  local -A walls=() cpus=() failed=()
  for ph in $phases; do
    case $ph in full | noop1) reps=$reps_slow ;; *) reps=$reps_fast ;; esac
    echo "  $shape $ph: ${present[*]}, $reps runs each..." >&2
    for ((i = 0; i < reps; i++)); do
      for tool in "${present[@]}"; do
        [[ -n ${failed[$ph $tool]:-} ]] && continue
        # snakemake's full and first no-op runs are minutes: once each.
        [[ $tool == snakemake && ($ph == full || $ph == noop1) && $i -gt 0 ]] && continue
        if ! got=$(once "$ph" "$tool" "$shape" "${size[$tool]}" "${dir[$tool]}" "$i"); then
          mismatch "$tool $shape $ph run failed"
          failed[$ph $tool]=1
          continue
        fi
        walls[$ph $tool]+="${got% *}"$'\n'
        cpus[$ph $tool]+="${got#* }"$'\n'
      done
    done
  done
  for tool in "${present[@]}"; do
    local line="  $shape $tool:"
    for ph in $phases; do
      [[ -n ${failed[$ph $tool]:-} || -z ${walls[$ph $tool]:-} ]] && continue
      local w c
      w=$(printf '%s' "${walls[$ph $tool]}" | median)
      c=$(printf '%s' "${cpus[$ph $tool]}" | median)
      results+=("$shape $ph $tool $(awk -v a="$w" -v s="${scale[$tool]}" 'BEGIN{print a*s}') $(awk -v a="$c" -v s="${scale[$tool]}" 'BEGIN{print a*s}') ${note[$tool]}")
      line+=" $ph ${w}s"
    done
    echo "$line ${note[$tool]}" >&2
    rm -rf "${dir[$tool]}"
  done
  rm -rf "$base" "$scratch/$shape-tenth"
}

echo "bench/dag: $berth, -j $jobs, touch $touch_n, read $read_n, chain $chain steps, scratch $scratch"
((touch_n > 0)) && run_shape touch "$touch_n"
((read_n > 0)) && run_shape read "$read_n"
((chain > 0)) && run_shape chain "$chain"

# The table, and berth's targets (full <= 1.1x ninja; first no-op and edit-one <= 2x).
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
      if (f[1] == "chain" || f[2] == "noop") continue  # informational
      want = f[2] == "full" ? 1.1 : 2.0
      r = f[4] / ninja[key]
      printf "target %-5s %-4s berth <= %.1fx ninja: %.2fx  %s\n", f[1], f[2], want, r,
        r <= want ? "PASS" : "MISS"
    }
  }'
[[ -s $scratch/mismatches ]] && status=1
exit $status
