#!/usr/bin/env bash
# Placement on the real local Slurm (4 emulated nodes of 2 CPUs): inside one
# allocation, four placed launches started at once each see only their own CPUs and
# run at the same time; a pool-driven run of more launches than fit queues the rest
# and never puts two on one CPU at once.
. "$(dirname "$0")/common.sh"
need_slurm
export BERTH W=$T
chmod 755 "$T"

# Each launch records: node, allowed CPUs, start and end time.
cat >"$T/probe.sh" <<'X'
#!/bin/bash
s=$(date +%s.%N)
sleep 1.5
echo "$SLURMD_NODENAME $(grep Cpus_allowed_list /proc/self/status | cut -f2) $s $(date +%s.%N)"
X
chmod 755 "$T/probe.sh"

# 1. Four explicit placements, started together.
cat >"$T/four.sh" <<'X'
set -e
"$BERTH" machine --format json >"$W/machine.json"
# The allocation's own nodes: which two Slurm grants depends on what else is running.
nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
for spec in "${nodes[0]} 0" "${nodes[0]} 1" "${nodes[1]} 0" "${nodes[1]} 1"; do
  set -- $spec
  "$BERTH" place -n 1 --nodes "$1" --cores "$2" --run -- "$W/probe.sh" >>"$W/four.out" &
done
wait
X
if timeout 120 salloc -N2 -n4 bash "$T/four.sh" >"$T/four.log" 2>&1; then ok "four placed launches ran"
else fail "salloc failed: $(cat "$T/four.log")"; fi
OUT=$(cat "$T/machine.json")
expect_eq "machine: srun detected" "$(json "j['launcher']['kind']")" srun
expect_eq "machine: scheduler-enforced on 22.05" "$(json "j['placement_support']")" scheduler-enforced
expect_eq "four launches reported" "$(wc -l <"$T/four.out")" 4
# Every launch is confined to one CPU, and no two on one node share it.
expect_eq "each launch sees exactly one CPU" "$(awk '$2 ~ /^[0-9]+$/' "$T/four.out" | wc -l)" 4
expect_eq "node:cpu pairs are distinct" "$(awk '{print $1":"$2}' "$T/four.out" | sort -u | wc -l)" 4
# Concurrent: the latest start comes before the earliest end.
expect_eq "they overlap in time" \
  "$(awk 'NR==1{ms=$3; me=$4} {if($3>ms)ms=$3; if($4<me)me=$4} END{print (ms<me)?"yes":"no"}' "$T/four.out")" yes

# 2. A pool-driven run of 7 one-CPU launches in a 4-CPU allocation: 4 at a time.
cat >"$T/pool.sh" <<'X'
"$BERTH" place -n 1 --auto --count 7 --run -- "$W/probe.sh" >"$W/pool.out"
X
if timeout 120 salloc -N2 -n4 bash "$T/pool.sh" >"$T/pool.log" 2>&1; then ok "pool run finished"
else fail "pool salloc failed: $(cat "$T/pool.log")"; fi
expect_eq "all seven ran" "$(wc -l <"$T/pool.out")" 7
# Never two launches on one node:cpu at the same time.
overlaps=$(python3 - "$T/pool.out" <<'P'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
bad = 0
for i, a in enumerate(rows):
    for b in rows[i + 1:]:
        if a[0] == b[0] and a[1] == b[1] and float(a[2]) < float(b[3]) and float(b[2]) < float(a[3]):
            bad += 1
print(bad)
P
)
expect_eq "no two launches share a CPU at once" "$overlaps" 0
# Some queued: with 4 CPUs and 7 launches, at most 4 ran at any moment.
most=$(python3 - "$T/pool.out" <<'P'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(max(sum(1 for b in rows if float(b[2]) <= float(a[2]) < float(b[3])) for a in rows))
P
)
expect_eq "at most 4 at once" "$([[ $most -le 4 && $most -ge 2 ]] && echo yes || echo "no ($most)")" yes
finish
