#!/usr/bin/env bash
# Workers started by srun on the real local Slurm (4 nodes) divide one pipeline over a
# shared file:// store: each worker places steps on its own node only, every step runs
# exactly once, and the work is spread over the nodes.
. "$(dirname "$0")/common.sh"
need_slurm
chmod 755 "$T"
# $SLURMD_NODENAME is expanded by the step's shell, so it is the same text (and key)
# for every worker; the log line says which node ran the step.
cat >"$T/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"] }
run = "echo {i} \$SLURMD_NODENAME >> $T/log; sleep 0.5; echo {i} > {out.o}"
outputs = ["o"]
X
if ! timeout 180 srun -N4 -n4 --output="$T/w-%t.json" \
    "$BERTH" run "$T/p.toml" --worker --store "file://$T/store" --format json 2>"$T/err"; then
  fail "srun workers failed: $(cat "$T/err" "$T"/w-*.json 2>/dev/null | tail -20)"
  finish
fi
expect_eq "srun: four workers reported" "$(ls "$T"/w-*.json | wc -l)" 4
expect_eq "srun: every step ran once" "$(cut -d' ' -f1 "$T/log" | sort | uniq -d | wc -l)" 0
expect_eq "srun: all twelve ran" "$(cut -d' ' -f1 "$T/log" | sort -u | wc -l)" 12
total=$(python3 -c 'import json,sys; print(sum(json.load(open(p))["executed"] for p in sys.argv[1:]))' "$T"/w-*.json)
expect_eq "srun: executions add up to the graph" "$total" 12
nodes=$(cut -d' ' -f2 "$T/log" | sort -u | wc -l)
expect_eq "srun: the work spread over several nodes" "$(( nodes >= 2 ))" 1
names=$(python3 -c 'import json,sys; print(len({json.load(open(p))["worker"] for p in sys.argv[1:]}))' "$T"/w-*.json)
expect_eq "srun: generated worker names are distinct" "$names" 4
run run "$T/p.toml" --store "file://$T/store" --format json
expect_eq "srun: an ordinary run afterwards executes nothing" "$(json "j['executed']")" 0

# srun -c2: each worker runs on the two CPUs srun gave its task, two steps at a time,
# not one per task. Each step logs its node and when it began and ended; on some node
# two steps overlap.
cat >"$T/c.toml" <<X
[[step]]
name = "c-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6", "7", "8"] }
run = "a=\$(date +%s.%N); sleep 1; echo {i} \$SLURMD_NODENAME \$a \$(date +%s.%N) >> $T/clog; echo {i} > {out.o}"
outputs = ["o"]
X
if ! timeout 180 salloc -N4 -n4 -c2 srun -N4 -n4 -c2 --output="$T/c-%t.json" \
    "$BERTH" run "$T/c.toml" --worker --store "file://$T/cstore" --format json 2>"$T/err"; then
  fail "srun -c2 workers failed: $(cat "$T/err" "$T"/c-*.json 2>/dev/null | tail -20)"
  finish
fi
expect_eq "srun -c2: all eight ran once" "$(cut -d' ' -f1 "$T/clog" | sort | uniq | wc -l) $(wc -l <"$T/clog")" "8 8"
expect_eq "srun -c2: a worker ran two steps at once" "$(python3 - "$T/clog" <<'PY'
import sys
by = {}
for line in open(sys.argv[1]):
    _, node, a, b = line.split()
    by.setdefault(node, []).append((float(a), float(b)))
print(any(x[0] < y[1] and y[0] < x[1] for spans in by.values()
          for i, x in enumerate(spans) for y in spans[i + 1:]))
PY
)" True
finish
