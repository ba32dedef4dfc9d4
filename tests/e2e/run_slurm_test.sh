#!/usr/bin/env bash
# A pipeline inside a real Slurm allocation (the local 4-node cluster): independent
# steps run concurrently, each placed by the pool on its own CPU of a node and
# launched with srun, never two on one CPU at once.
. "$(dirname "$0")/common.sh"
need_slurm
chmod 755 "$T"
cat >"$T/p.toml" <<'X'
[[step]]
name = "probe-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6"] }
run = "s=$(date +%s.%N); sleep 1; echo \"$SLURMD_NODENAME $(grep Cpus_allowed_list /proc/self/status | cut -f2) $s $(date +%s.%N) {i}\" > {out.o}"
outputs = ["o"]
X
export BERTH T
if ! timeout 180 salloc -N2 -n4 bash -c '"$BERTH" run "$T/p.toml" --format json >"$T/report.json"' >"$T/log" 2>&1; then
  fail "salloc run failed: $(cat "$T/log")"
  finish
fi
OUT=$(cat "$T/report.json")
expect_eq "six executed" "$(json "j['executed']")" 6
cat "$T"/results-p/probe-*/o >"$T/all"
expect_eq "each step saw one CPU" "$(awk '$2 ~ /^[0-9]+$/' "$T/all" | wc -l)" 6
overlaps=$(python3 - "$T/all" <<'P'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(sum(1 for i, a in enumerate(rows) for b in rows[i+1:]
          if a[0] == b[0] and a[1] == b[1] and float(a[2]) < float(b[3]) and float(b[2]) < float(a[3])))
P
)
expect_eq "no two steps on one node:cpu at once" "$overlaps" 0
concurrent=$(python3 - "$T/all" <<'P'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(max(sum(1 for b in rows if float(b[2]) <= float(a[2]) < float(b[3])) for a in rows))
P
)
expect_eq "steps ran concurrently (2-4 at once)" "$([[ $concurrent -ge 2 && $concurrent -le 4 ]] && echo yes || echo "no ($concurrent)")" yes
expect_eq "steps ran on both nodes" "$(awk '{print $1}' "$T/all" | sort -u | wc -l)" 2
finish
