#!/usr/bin/env bash
# Under a scheduler, --host and --hostfile only filter: they select nodes and may lower
# slots, and naming a node outside the allocation is refused, naming the node.
. "$(dirname "$0")/common.sh"
cat >"$T/slurm.env" <<'X'
SLURM_JOB_ID=77
SLURM_JOB_NODELIST=n[1-4]
SLURM_TASKS_PER_NODE=4(x4)
X

run alloc --format json --env-file "$T/slurm.env" --host n2,n4:2
expect_eq "filter: exit 0" "$RC" 0
expect_eq "filter: all four keep their index" "$(json "[n['index'] for n in j['nodes']]")" "[0, 1, 2, 3]"
expect_eq "filter: states" "$(json "[n['state'] for n in j['nodes']]")" \
  "['not-included', 'up', 'not-included', 'up']"
expect_eq "filter: n4 lowered to 2, total 6" "$(json "j['total_slots']")" 6

run alloc --format json --env-file "$T/slurm.env" --host +n0,+n3
expect_eq "filter +n: selects by index" "$(json "[n['name'] for n in j['nodes'] if n['state']=='up']")" "['n1', 'n4']"
run alloc --format json --env-file "$T/slurm.env" --host +e:3
expect_eq "filter +e:3: first three" "$(json "j['total_slots']")" 12

printf 'n1 slots=1\n^n3\n' >"$T/hf"
printf '^n3\n' >"$T/hf_ex"
run alloc --format json --env-file "$T/slurm.env" --hostfile "$T/hf_ex"
expect_eq "hostfile ^n3 excludes only n3" "$(json "[n['state'] for n in j['nodes']]")" \
  "['up', 'up', 'not-included', 'up']"

expect_bad_input "filter: outside node refused" "node 'zz' is not in the slurm allocation" \
  alloc --env-file "$T/slurm.env" --host n1,zz
expect_bad_input "filter: more slots refused" "asks for 9 slots" \
  alloc --env-file "$T/slurm.env" --host n1:9
printf 'n1\nnope\n' >"$T/hf2"
expect_bad_input "filter: hostfile outside node refused" "'nope'" \
  alloc --env-file "$T/slurm.env" --hostfile "$T/hf2"
expect_bad_input "filter: +n out of range refused" "+n9" \
  alloc --env-file "$T/slurm.env" --host +n9
finish
