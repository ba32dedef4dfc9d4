#!/usr/bin/env bash
# bench/cluster/run.sh [BUILD_DIR] [STEPS] [SECONDS]: 1, 2 and 4 `berth run --worker`
# processes dividing STEPS (default 400) independent steps of SECONDS (default 0.1)
# each over one file:// store, each worker with one slot. Prints, per worker count,
# the makespan against the ideal (total work / workers), and the duplicate executions
# (steps run by more than one worker). Every run starts from an empty store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build/release}
N=${2:-400}
S=${3:-0.1}
BERTH=$BUILD/berth
[[ -x $BERTH ]] || { echo "no $BERTH: cmake --preset release && cmake --build build/release --target berth" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-cluster.XXXXXX")
trap 'rm -rf "$W"' EXIT
values=$(seq -s, -f '"%g"' 1 "$N")
printf '%-8s %10s %10s %8s %10s %10s\n' workers makespan_s ideal_s ratio executed duplicates
for workers in 1 2 4; do
  d=$W/w$workers
  mkdir -p "$d"
  cat >"$d/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = [$values] }
run = "echo {i} >> $d/log; sleep $S; echo {i} > {out.o}"
outputs = ["o"]
X
  start=$(date +%s.%N)
  pids=()
  for k in $(seq "$workers"); do
    "$BERTH" run "$d/p.toml" --worker="w$k" --store "file://$d/store" --host localhost:1 \
      --format json >"$d/w$k.json" 2>"$d/w$k.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "a worker failed: $(cat "$d"/*.err)" >&2; exit 1; }; done
  end=$(date +%s.%N)
  executed=$(python3 -c 'import json,sys; print(sum(json.load(open(p))["executed"] for p in sys.argv[1:]))' "$d"/w*.json)
  dups=$(sort "$d/log" | uniq -d | wc -l)
  python3 - "$workers" "$start" "$end" "$N" "$S" "$executed" "$dups" <<'PY'
import sys
w, a, b, n, s, e, d = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6], sys.argv[7]
ideal = n * s / w
print(f"{w:<8} {b - a:10.2f} {ideal:10.2f} {(b - a) / ideal:8.2f} {e:>10} {d:>10}")
PY
done
