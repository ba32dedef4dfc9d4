#!/usr/bin/env bash
# bench/allocation/run.sh [BUILD_DIR] [STEPS] [SECONDS]: one pipeline of STEPS (default
# 200) independent one-core steps of `sleep SECONDS` (default 0.1) run on the real
# 4-node Slurm (n1..n4, 2 CPUs each, as scripts/services.sh starts it) in four ways,
# one line per way:
#   1 srun-per-step  salloc -N4 -n8 berth run p.toml --agents off   (an srun per step)
#   2 worker-per-node  salloc -N4 -n4 -c2 srun -N4 -n4 -c2 berth run p.toml --worker --store S
#   3 worker-per-node-cpus  the same with --slurm-slots cpus
#   4 agents  salloc -N4 -n8 berth run p.toml   (default: one agent per node, one srun)
# Each line: wall seconds (from the allocation's start to berth's end, the median of
# REPEAT runs), the ideal (STEPS x SECONDS / 8 cores), wall/ideal, berth's own elapsed_s
# (the longest worker's), the whole salloc command's seconds (waiting for the
# allocation included), the steps executed (summed over workers) and, per node, the
# steps it ran and the most it ran at once (n1:50/2; the JSON report's per-step `node`,
# `start_s` and `end_s`). A way that fails prints
# "failed: <first lines of stderr>" and the others still run.
#
# Environment: BUILD (the build directory, when no argument gives it; berth is
# $BUILD/berth, default build/release), BERTH_BEFORE (a second berth binary: every way
# also runs with it, alternating with the first, and each way's after line ends with
# before/after, the before wall over the after wall), REPEAT (runs per way, default 1;
# the median is printed), WAYS (default "1 2 3 4"), SLURM_CONF (default
# /tmp/berth-services/slurm/slurm.conf), LIMIT_S (each salloc's timeout, default 300).
# `--agents` is passed only to a binary whose `berth run --help` mentions it. When the
# cluster is not there the bench prints "skipped: <why>" and exits 0.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build/release}}
N=${2:-200}
S=${3:-0.1}
REPEAT=${REPEAT:-1}
WAYS=${WAYS:-1 2 3 4}
LIMIT_S=${LIMIT_S:-300}
CORES=8 # -N4 -n8, or -N4 -n4 -c2: 4 nodes x 2 CPUs
export SLURM_CONF=${SLURM_CONF:-/tmp/berth-services/slurm/slurm.conf}

[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "REPEAT must be a positive integer, not '$REPEAT'" >&2; exit 2; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
BERTH=$BUILD/berth
[[ -x $BERTH ]] || { echo "no $BERTH: cmake --preset release && cmake --build build/release --target berth" >&2; exit 1; }
BERTH=$(abs "$BERTH")
BEFORE=${BERTH_BEFORE:-}
if [[ -n $BEFORE ]]; then
  [[ -x $BEFORE ]] || { echo "BERTH_BEFORE=$BEFORE is not an executable" >&2; exit 1; }
  BEFORE=$(abs "$BEFORE")
fi
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 1; }

skip() { echo "skipped: $*"; exit 0; }
# --- is the cluster there? Every reason not to run is said, exactly.
for t in salloc srun sinfo scancel; do
  command -v "$t" >/dev/null || skip "no $t on PATH (scripts/install-deps.sh installs it; scripts/services.sh start starts the cluster)"
done
[[ -r $SLURM_CONF ]] || skip "no Slurm config at SLURM_CONF=$SLURM_CONF (start it: scripts/services.sh start)"
rc=0; nodes=$(timeout 15 sinfo -h -N -o '%N %c %t' 2>&1) || rc=$?
((rc != 124)) || skip "sinfo (SLURM_CONF=$SLURM_CONF) had no answer from slurmctld in 15 s"
((rc == 0)) || skip "sinfo (SLURM_CONF=$SLURM_CONF) failed (exit $rc), slurmctld is not answering: $(grep -m1 . <<<"$nodes" || true)"
usable=$(awk '$2 >= 2 && $3 ~ /^(idle|mix|alloc|comp)$/' <<<"$nodes" | sort -u | wc -l)
((usable >= 4)) || skip "needs 4 nodes of 2 CPUs that are up; sinfo shows: $(tr '\n' ';' <<<"$nodes")"
rc=0; out=$(timeout 60 srun -Q -N4 -n4 true 2>&1) || rc=$?
((rc != 124)) || skip "srun -N4 -n4 true did not finish in 60 s (nodes held by other jobs, or a slurmd down): $(timeout 15 squeue -h 2>/dev/null | wc -l) jobs in the queue"
((rc == 0)) || skip "srun -N4 -n4 true failed (exit $rc; a slurmd down?): $(grep -v '^[[:space:]]*$' <<<"$out" | head -n2 | tr '\n' ' ' || true)"

W=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-allocation.XXXXXX")
JOB=berth-bench-allocation.$$
trap 'timeout 15 scancel --name="$JOB" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT

values=$(seq -s, -f '"%g"' 1 "$N")
has_agents() { local h; h=$("$1" run --help 2>&1 || true); [[ $h == *--agents* ]]; }

cat >"$W/collect.py" <<'PY'
# collect.py DIR N SALLOC_S: read a run's report(s); print one TSV row:
# ok  wall  berth_s  salloc_s  executed  nodes      (or: failed  message)
import glob, json, os, sys
from collections import Counter
d, n, salloc_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def fail(msg):
    print("failed\t" + " ".join(msg.split())[:400]); sys.exit(0)
reports = sorted(glob.glob(os.path.join(d, "w*.json"))) or [os.path.join(d, "out.json")]
executed, elapsed, nodes, failed, peak = 0, 0.0, Counter(), 0, {}
for p in reports:
    try:
        r = json.load(open(p))
    except Exception as e:
        fail(f"no JSON report in {os.path.basename(p)}: {e}")
    executed += r.get("executed", 0); failed += r.get("failed", 0)
    elapsed = max(elapsed, r.get("elapsed_s", 0.0))
    spans = {}   # node -> [(start_s, +1), (end_s, -1)]: one report's times share an origin
    for s in r.get("steps", []):
        if s.get("state") == "executed":
            for node in filter(None, (s.get("node") or "?").split(",")):
                nodes[node] += 1
                spans.setdefault(node, []).extend([(s.get("start_s", 0.0), 1), (s.get("end_s", 0.0), -1)])
    for node, ev in spans.items():   # the most steps this report had running on the node at once
        at = top = 0
        for _, k in sorted(ev, key=lambda e: (e[0], e[1])):
            at += k; top = max(top, at)
        peak[node] = max(peak.get(node, 0), top)
try:
    wall = float(open(os.path.join(d, "t1")).read()) - float(open(os.path.join(d, "t0")).read())
except Exception as e:
    fail(f"no timing: {e}")
if failed:
    fail(f"{failed} steps failed")
names = " ".join(f"{k}:{v}/{peak.get(k, 0)}" for k, v in sorted(nodes.items())) or "-"
print(f"ok\t{wall:.3f}\t{elapsed:.3f}\t{salloc_s:.3f}\t{executed}\t{names}")
PY

cat >"$W/line.py" <<'PY'
# line.py WAY WHO N S CORES NOTE BEFORE_ROWS_OR_- ROWS: one line for a way from its runs' rows
import statistics, sys
way, who, n, s, cores, note, before, rows = sys.argv[1:9]
ideal = int(n) * float(s) / int(cores)
def load(p):
    return [l.rstrip("\n").split("\t") for l in open(p)] if p != "-" else []
def summary(rs):
    bad = [r for r in rs if r[0] != "ok"]
    if bad:
        k = f" ({len(bad)} of {len(rs)} runs)" if len(rs) > 1 else ""
        return None, f"failed{k}: {bad[0][1] if len(bad[0]) > 1 else ''}"
    walls = [float(r[1]) for r in rs]
    med = statistics.median(walls)
    r = min(rs, key=lambda r: abs(float(r[1]) - med))   # the run nearest the median
    bs = statistics.median(float(x[2]) for x in rs)
    ss = statistics.median(float(x[3]) for x in rs)
    return med, f"{med:8.2f} {ideal:8.2f} {med / ideal:7.2f} {bs:8.2f} {ss:9.2f} {r[4]:>9}  {r[5]}"
def skipped(rs):
    return rs and rs[0][0] == "skipped"
after = load(rows)
label = f"{way:<22}" + (f" {who:<7}" if who else "")
if skipped(after):
    print(f"{label} {after[0][1]}")
    sys.exit(0)
med, text = summary(after)
tail = ""
if before != "-":
    b = load(before)
    bmed = None if skipped(b) else summary(b)[0]
    tail = f"  before/after {bmed / med:.2f}" if bmed and med else "  before/after -"
print(f"{label} {text}{tail}{'  ' + note if note != '-' else ''}")
PY

# run_one WAY BIN DIR AGENTS: one run of a way, from an empty store and cache (a new DIR);
# prints its row (collect.py's)
run_one() {
  local way=$1 bin=$2 d=$3 agents=$4 rc=0 a b
  mkdir -p "$d"
  cat >"$d/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = [$values] }
run = "sleep $S"
params = { i = "{i}" }
cores = 1
X
  # The timer runs inside the allocation: wall is from the allocation's start to berth's end.
  local timer=(bash -c 'd=$1; shift; date +%s.%N >"$d/t0"; "$@"; rc=$?; date +%s.%N >"$d/t1"; exit $rc' timer "$d")
  local run=("$bin" run "$d/p.toml" --store "file://$d/store" --format json)
  local cmd
  case $way in
    1) cmd=(salloc -Q -J "$JOB" -N4 -n8 "${timer[@]}" "${run[@]}")
       [[ $agents == yes ]] && cmd+=(--agents off) ;;
    2|3) cmd=(salloc -Q -J "$JOB" -N4 -n4 -c2 "${timer[@]}" srun -N4 -n4 -c2
              --output="$d/w%t.json" --error="$d/w%t.err" "${run[@]}" --worker)
       [[ $way == 3 ]] && cmd+=(--slurm-slots cpus) ;;
    4) cmd=(salloc -Q -J "$JOB" -N4 -n8 "${timer[@]}" "${run[@]}") ;;
  esac
  a=$(date +%s.%N)
  (cd "$d" && timeout -k 10 "$LIMIT_S" "${cmd[@]}" >"$d/out.json" 2>"$d/err") || rc=$?
  b=$(date +%s.%N)
  if ((rc != 0)); then
    local msg
    msg=$(cat "$d/err" "$d"/w*.err 2>/dev/null | grep -v '^[[:space:]]*$' | head -n3 | tr '\n' ' ' || true)
    ((rc == 124 || rc == 137)) && msg="timed out after ${LIMIT_S} s; $msg"
    printf 'failed\t%s\n' "${msg:-exit status $rc, nothing on stderr}"
  else
    python3 "$W/collect.py" "$d" "$N" "$(awk -v a="$a" -v b="$b" 'BEGIN{print b-a}')"
  fi
  rm -rf "$d"   # a fresh directory each run; the row is all that is kept
}

name_of() { case $1 in 1) echo 1:srun-per-step;; 2) echo 2:worker-per-node;; 3) echo 3:worker-per-node-cpus;; 4) echo 4:agents;; esac; }

echo "# $N steps of sleep $S, cores = 1, on $(timeout 15 sinfo -h -o '%D nodes %N, %c CPUs each' || echo '?'); ideal = $N x $S / $CORES cores; REPEAT=$REPEAT"
echo "# after: $BERTH${BEFORE:+; before: $BEFORE}"
hdr=$(printf '%-22s' way)
[[ -n $BEFORE ]] && hdr+=$(printf ' %-7s' berth)
printf '%s %8s %8s %7s %8s %9s %9s  %s\n' "$hdr" wall_s ideal_s ratio berth_s salloc_s executed steps/peak_per_node

for way in $WAYS; do
  [[ $way =~ ^[1-4]$ ]] || { echo "WAYS: no way '$way' (1-4)" >&2; exit 2; }
  whos=(after); [[ -n $BEFORE ]] && whos=(before after)
  for who in "${whos[@]}"; do
    bin=$BERTH; [[ $who == before ]] && bin=$BEFORE
    : >"$W/rows.$way.$who"
    echo - >"$W/note.$way.$who"
    if ! has_agents "$bin"; then
      if [[ $way == 4 ]]; then
        printf 'skipped\tskipped: this berth has no agents (berth run --help has no --agents)\n' >"$W/rows.$way.$who"
      elif [[ $way == 1 ]]; then
        echo "(could not choose: this berth has no --agents; ran without it)" >"$W/note.$way.$who"
      fi
    fi
  done
  for ((rep = 1; rep <= REPEAT; rep++)); do
    order=("${whos[@]}")
    if ((rep % 2 == 0 && ${#whos[@]} == 2)); then order=(after before); fi   # alternate who goes first
    for who in "${order[@]}"; do
      [[ $(head -c7 "$W/rows.$way.$who") == skipped ]] && continue
      bin=$BERTH; [[ $who == before ]] && bin=$BEFORE
      agents=no; has_agents "$bin" && agents=yes
      run_one "$way" "$bin" "$W/run.$way.$who.$rep" "$agents" >>"$W/rows.$way.$who"
    done
  done
  for who in "${whos[@]}"; do
    before=-; [[ $who == after && -n $BEFORE ]] && before=$W/rows.$way.before
    label=""; [[ -n $BEFORE ]] && label=$who
    python3 "$W/line.py" "$(name_of "$way")" "$label" "$N" "$S" "$CORES" "$(cat "$W/note.$way.$who")" "$before" "$W/rows.$way.$who"
  done
done
