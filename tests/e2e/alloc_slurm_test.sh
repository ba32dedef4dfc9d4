#!/usr/bin/env bash
# Inside real Slurm allocations of 2-4 nodes (the local 4-node cluster started by
# scripts/services.sh), berth alloc must agree with `scontrol show hostnames` and with
# the number of tasks Slurm actually starts on each node.
. "$(dirname "$0")/common.sh"
need_slurm

# inside KIND SHAPE...: runs the probe inside a salloc or sbatch job of that shape.
probe() {
  cat <<'X'
set -e
"$BERTH" alloc --format json >"$W/alloc.json"
scontrol show hostnames "$SLURM_JOB_NODELIST" >"$W/hostnames"
srun bash -c 'echo $SLURMD_NODENAME' | sort | uniq -c | awk '{print $2, $1}' >"$W/tasks"
X
}

check() {
  local label=$1
  OUT=$(cat "$W/alloc.json")
  expect_eq "$label: owner" "$(json "j['owner']")" slurm
  expect_eq "$label: scheduler-owned" "$(json "j['scheduler_owned']")" True
  expect_eq "$label: names agree with scontrol show hostnames" \
    "$(json "' '.join(n['name'] for n in j['nodes'])")" "$(tr '\n' ' ' <"$W/hostnames" | sed 's/ $//')"
  expect_eq "$label: slots agree with the tasks srun starts per node" \
    "$(json "' '.join(n['name']+':'+str(n['slots']) for n in sorted(j['nodes'], key=lambda n: n['name']))")" \
    "$(sort "$W/tasks" | awk '{printf "%s%s:%s", (NR>1?" ":""), $1, $2}')"
  expect_eq "$label: total slots = tasks" "$(json "j['total_slots']")" "$(awk '{s+=$2} END {print s}' "$W/tasks")"
}

export BERTH
i=0
for shape in "-N2 -n3" "-N3 -n5" "-N4 -n8" "-N4 -n4"; do
  i=$((i + 1))
  W=$T/salloc$i; mkdir -p "$W"; export W
  probe >"$W/job.sh"
  # shellcheck disable=SC2086
  if timeout 120 salloc $shape bash "$W/job.sh" >"$W/log" 2>&1; then
    check "salloc $shape"
  else
    fail "salloc $shape failed: $(cat "$W/log")"
  fi
done

# Inside a job step over part of the job: the step's nodes and counts, one view (the job's
# node list with the step's counts was refused). srun -N2 -n2 in a 4-node job: 2 nodes,
# one slot each, on every task; with -c2 and --slurm-slots cpus, two CPUs a node.
W=$T/step; mkdir -p "$W"
# docs FILE: for each JSON document in FILE (one per task), "<nodes>:<slots a node>:<total>".
cat >"$W/docs.py" <<'PY'
import json, sys
text, at, dec, out = open(sys.argv[1]).read(), 0, json.JSONDecoder(), []
while True:
    while at < len(text) and text[at].isspace():
        at += 1
    if at >= len(text):
        break
    j, at = dec.raw_decode(text, at)
    slots = ",".join(sorted({str(n["slots"]) for n in j["nodes"]}))
    out.append(f"{len(j['nodes'])}:{slots}:{j['total_slots']}")
print(" ".join(out))
PY
if timeout 120 salloc -N4 -n8 srun -N2 -n2 "$BERTH" alloc --format json >"$W/out" 2>"$W/err"; then
  expect_eq "srun -N2 inside a 4-node job: each task sees the step's 2 nodes, a slot each" \
    "$(python3 "$W/docs.py" "$W/out")" "2:1:2 2:1:2"
else
  fail "salloc -N4 -n8 srun -N2 -n2 berth alloc: $(cat "$W/err")"
fi
if timeout 120 salloc -N4 -n4 -c2 srun -N4 -n4 -c2 "$BERTH" alloc --slurm-slots cpus --format json \
    >"$W/cpus" 2>"$W/err"; then
  expect_eq "srun -c2 --slurm-slots cpus: two slots a node" \
    "$(python3 "$W/docs.py" "$W/cpus")" "4:2:8 4:2:8 4:2:8 4:2:8"
else
  fail "srun -c2 berth alloc --slurm-slots cpus: $(cat "$W/err")"
fi

# The same from a batch job, where berth runs on the first node of the allocation.
W=$T/sbatch; mkdir -p "$W"; export W
{ echo '#!/bin/bash'; probe; } >"$W/job.sh"
if timeout 120 sbatch --wait -N3 -n6 -o "$W/log" "$W/job.sh" >/dev/null 2>&1; then
  check "sbatch -N3 -n6"
else
  fail "sbatch failed: $(cat "$W/log" 2>/dev/null)"
fi
finish
