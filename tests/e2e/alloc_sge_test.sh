#!/usr/bin/env bash
# Inside a real Grid Engine parallel-environment job (scripts/services.sh starts one),
# berth alloc reads the job's real PE_HOSTFILE: the same hosts and slots.
. "$(dirname "$0")/common.sh"
need_sge

W=$T; chmod 755 "$W"
cat >"$W/job.sh" <<X
#!/bin/bash
cp "\$PE_HOSTFILE" "$W/pe_hostfile"
"$BERTH" alloc --format json >"$W/alloc.json" 2>"$W/alloc.err"
echo \$? >"$W/rc"
X
chmod 755 "$W/job.sh"
if ! timeout 120 qsub -sync y -pe mpi 2 -cwd -o "$W/out" -e "$W/err" "$W/job.sh" >"$W/qsub.log" 2>&1; then
  fail "qsub failed: $(cat "$W/qsub.log")"
  finish
fi
expect_eq "berth exited 0 inside the job" "$(cat "$W/rc")" 0
OUT=$(cat "$W/alloc.json")
expect_eq "owner" "$(json "j['owner']")" gridengine
expect_eq "job id is the job's" "$(json "j['job_id'] != ''")" True
want=$(awk '{s[$1]+=$2} END {for (h in s) print h, s[h]}' "$W/pe_hostfile" | sort | \
  awk '{split($1, a, "."); printf "%s%s:%s", (NR>1?" ":""), a[1], $2}')
expect_eq "hosts and slots agree with PE_HOSTFILE" \
  "$(json "' '.join(n['name']+':'+str(n['slots']) for n in sorted(j['nodes'], key=lambda n: n['name']))")" "$want"
expect_eq "slots given" "$(json "all(n['slots_given'] for n in j['nodes'])")" True
finish
