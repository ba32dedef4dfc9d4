#!/usr/bin/env bash
# Bad input of every kind ends with exit 2 and one stderr line naming the variable or
# file:line and what was wrong; nothing is printed on stdout.
. "$(dirname "$0")/common.sh"

# bad NAME NEEDLE ENV-LINES...: writes the env file, runs alloc, expects bad input.
bad() {
  local name=$1 needle=$2
  shift 2
  printf '%s\n' "$@" >"$T/bad.env"
  expect_bad_input "$name" "$needle" alloc --format json --env-file "$T/bad.env"
}

bad "slurm: empty nodelist" "SLURM_JOB_NODELIST" SLURM_JOB_ID=1 SLURM_JOB_NODELIST= SLURM_TASKS_PER_NODE=1
bad "slurm: unbalanced bracket" "SLURM_JOB_NODELIST" SLURM_JOB_ID=1 'SLURM_JOB_NODELIST=n[1-4' SLURM_TASKS_PER_NODE=1
bad "slurm: reversed range" "SLURM_JOB_NODELIST" SLURM_JOB_ID=1 'SLURM_JOB_NODELIST=n[4-1]' SLURM_TASKS_PER_NODE=1
bad "slurm: tasks list does not parse" "SLURM_TASKS_PER_NODE" SLURM_JOB_ID=1 'SLURM_JOB_NODELIST=n[1-2]' 'SLURM_TASKS_PER_NODE=2(x'
bad "slurm: tasks list too short" "SLURM_TASKS_PER_NODE" SLURM_JOB_ID=1 'SLURM_JOB_NODELIST=n[1-3]' 'SLURM_TASKS_PER_NODE=2(x2)'
bad "slurm: job id not a number" "SLURM_JOB_ID" SLURM_JOB_ID=abc SLURM_JOB_NODELIST=n1 SLURM_TASKS_PER_NODE=1
bad "slurm: no nodelist" "SLURM_JOB_NODELIST" SLURM_JOB_ID=5
big=$(head -c 65536 /dev/zero | tr '\0' a)
bad "slurm: 64 KiB variable" "SLURM_JOB_NODELIST" SLURM_JOB_ID=1 "SLURM_JOB_NODELIST=$big" SLURM_TASKS_PER_NODE=1
bad "pbs: unreadable nodefile" "PBS_NODEFILE" PBS_JOBID=1.server PBS_NODEFILE=/nonexistent/nodes
bad "pbs: empty variable" "PBS_NODEFILE" PBS_JOBID=1.server PBS_NODEFILE=
bad "lsf: odd LSB_MCPU_HOSTS" "LSB_MCPU_HOSTS" LSB_JOBID=9 'LSB_MCPU_HOSTS=hostA 4 hostB'
bad "lsf: count not a number" "LSB_MCPU_HOSTS" LSB_JOBID=9 'LSB_MCPU_HOSTS=hostA four'
printf 'nodeA 2 all.q@nodeA UNDEFINED\nnodeB two all.q@nodeB UNDEFINED\n' >"$T/pe"
bad "gridengine: bad slot count names file:line" "$T/pe:2" JOB_ID=3 "PE_HOSTFILE=$T/pe"
printf '{"version": 2}' >"$T/r.json"
bad "flux: wrong R version" "version" "BERTH_FLUX_R=$T/r.json"
printf '{"version": 1, "execution": ' >"$T/r2.json"
bad "flux: truncated JSON" "$T/r2.json" "BERTH_FLUX_R=$T/r2.json"

# Hostfile and --host errors name their file:line or flag and position.
printf 'good slots=2\nbad slots=x\n' >"$T/hf"
expect_bad_input "hostfile: bad line names file:line" "$T/hf:2" alloc --hostfile "$T/hf" --env-file /dev/null
expect_bad_input "hostfile: unreadable" "/nonexistent/hf" alloc --hostfile /nonexistent/hf --env-file /dev/null
expect_bad_input "--host: bad slots" "--host" alloc --host a:x --env-file /dev/null
expect_bad_input "--host: empty token" "--host" alloc --host a,,b --env-file /dev/null
expect_bad_input "--simulate: malformed" "--simulate" alloc --simulate 3x --env-file /dev/null
# berth run: an allocation that is wrong is said before the pipeline file is read, and
# the run fails as alloc would.
expect_bad_input "run: --host is said before the pipeline file" "--host: position 2" \
  run "$T/no-such-pipeline.toml" --host 'a[1-' --env-file /dev/null
expect_bad_input "--multiplier: zero" "--multiplier" alloc --simulate 1x1 --multiplier 0 --env-file /dev/null
# Past 10^7 nodes in all: refused before any node is made (it used to abort the process).
expect_bad_input "--multiplier: past ten million nodes" \
  "--multiplier: 100000000000000 copies of the simulator allocation's 2 node(s) are more than 10000000 nodes" \
  alloc --simulate 2x1 --multiplier 100000000000000 --env-file /dev/null

# The env file itself.
printf 'A=1\nnot a line\n' >"$T/broken.env"
expect_bad_input "env file: bad line names file:line" "$T/broken.env:2" alloc --env-file "$T/broken.env"
expect_bad_input "env file: missing" "/nonexistent/e.env" alloc --env-file /nonexistent/e.env

# Two equal-priority schedulers both claiming the job: refused, not guessed.
printf 'n1\n' >"$T/pbsnodes"
printf 'n1 1 q UNDEFINED\n' >"$T/pe1"
bad "pbs and gridengine both present" "both pbs and gridengine" PBS_JOBID=1 "PBS_NODEFILE=$T/pbsnodes" JOB_ID=2 "PE_HOSTFILE=$T/pe1"
finish
