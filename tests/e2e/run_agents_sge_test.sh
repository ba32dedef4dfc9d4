#!/usr/bin/env bash
# berth run inside a real Grid Engine parallel-environment job starts its agents with
# qrsh -inherit (spec 08 §2), and they run the steps. The local Grid Engine has one
# host, the job's own, so --agents all puts an agent on it too: each step is started by
# the agent qrsh started, not by the run.
. "$(dirname "$0")/common.sh"
need_sge
W=$T; chmod 755 "$W"
cat >"$W/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4"] }
run = "echo {i} \$(ps -o args= -p \$PPID | cut -d' ' -f2) \$(ps -o args= -p \$(ps -o ppid= -p \$PPID) | cut -d' ' -f1) >> $W/log; echo {i} > {out.o}"
outputs = ["o"]
X
cat >"$W/job.sh" <<X
#!/bin/bash
cd "$W"
"$BERTH" run p.toml --agents all --format json >"$W/out.json" 2>"$W/err"
echo \$? >"$W/rc"
X
chmod 755 "$W/job.sh"
if ! timeout 180 qsub -sync y -pe mpi 2 -cwd -o "$W/out" -e "$W/qerr" "$W/job.sh" >"$W/qsub.log" 2>&1; then
  fail "qsub failed: $(cat "$W/qsub.log")"
  finish
fi
expect_eq "berth run exited 0 inside the job" "$(cat "$W/rc")" 0
OUT=$(cat "$W/out.json")
expect_eq "all four executed" "$(json "j['executed']")" 4
expect_eq "every step started by a berth agent" "$(cut -d' ' -f2 "$W/log" | sort -u)" agent
# The agent's parent is what Grid Engine starts for qrsh -inherit, not the run.
expect_eq "no agent is the run's own child" "$(cut -d' ' -f3 "$W/log" | grep -c berth)" 0
expect_eq "results in place" "$(cat "$W/results-p/s-3/o")" 3
finish
