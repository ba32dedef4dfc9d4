#!/usr/bin/env bash
# A pipeline step's tasks on this node are one MPI job (spec 07): Open MPI's through
# berth's PMIx server, MPICH's through its PMI socket. Two more things a run must not
# hide: a node nothing here reaches is refused before anything runs (spec 02 §7), and
# a memory cap the launcher will not enforce is said, on stderr and in the report.
. "$(dirname "$0")/common.sh"
for cc in mpicc.openmpi mpicc.mpich; do
  command -v $cc >/dev/null || { echo "FAIL: $cc is missing; run scripts/install-deps.sh" >&2; exit 1; }
done
mpicc.openmpi -o "$T/probe_ompi" "$E2E/data/mpi/probe.c"
mpicc.mpich -o "$T/probe_mpich" "$E2E/data/mpi/probe.c"
# As many tasks as this node has usable cores (a step's tasks are placed on cores).
N=$("$BERTH" machine --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["usable_core_ids"]))')
SUM=$(( N * (N - 1) / 2 ))
cat >"$T/p.toml" <<X
[[step]]
name = "ompi"
run = "$T/probe_ompi hello >> {out.o}"
outputs = ["o"]
tasks = $N
env = { OMPI_ALLOW_RUN_AS_ROOT = "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = "1" }

[[step]]
name = "mpich"
run = "$T/probe_mpich hello >> {out.o}"
outputs = ["o"]
tasks = $N
mpi = "pmi1"
X
cd "$T"
run run p.toml
expect_eq "both steps executed" "$RC" 0
for impl in ompi mpich; do
  expect_eq "$impl: one job of $N ranks, allreduce right" \
    "$(awk '{print $3, $4, $7, $8}' "$T/results-p/$impl/o" | sort | uniq -c | awk '{$1=$1; print}')" \
    "$N of $N sum $SUM"
  expect_eq "$impl: every rank once" "$(awk '{print $2}' "$T/results-p/$impl/o" | sort -n | tr '\n' ' ')" \
    "$(seq 0 $((N - 1)) | tr '\n' ' ')"
done
expect_bad_input "a step's mpi names the choices" "'mpich' is not a wire-up" run --dry-run \
  "$(printf '[[step]]\nname = "x"\nrun = "true"\nmpi = "mpich"\n' >"$T/bad.toml"; echo "$T/bad.toml")"

# A node nothing reaches: refused before any step runs, for run and place alike. With
# --launcher local: under auto the MPI launcher present reaches it (below).
cat >"$T/q.toml" <<X
[[step]]
name = "w-{i}"
foreach = { i = ["1", "2", "3"] }
run = "touch $T/ran-{i}; echo {i} > {out.o}"
outputs = ["o"]
X
here=$(hostname -s)
run run q.toml --launcher local --host "othernode:2,$here:1"
expect_eq "run: an unreachable node refuses the run" "$RC" 2
expect_contains "run: ...naming the node" "$ERR" "node 'othernode' is not this node"
expect_eq "run: ...before anything ran" "$(ls "$T" | grep -c '^ran-' || true)" 0
run place -n 1 --launcher local --nodes othernode --host "othernode:2,$here:1" -- true
expect_eq "place: an unreachable node is refused" "$RC" 2
expect_contains "place: ...naming it" "$ERR" "node 'othernode' is not this node"
run place -n 1 --launcher local --auto --run --host "othernode:2,$here:1" -- touch "$T/ran-place"
expect_eq "place --auto: an allocation with an unreachable node is refused" "$RC" 2
expect_eq "place --auto: ...before anything ran" "$([[ -e $T/ran-place ]] && echo ran || echo no)" no

# Under auto, a hostfile naming other nodes gets the MPI launcher present (spec 02 §8):
# Open MPI's mpirun over ssh, or hydra when named; one task on this node stays berth's.
run place -n 3 --nodes "othernode,$here" --host "othernode:2,$here:1" -- ./a.out
expect_eq "place: mpirun reaches othernode" "$RC" 0
expect_contains "place: ...over ssh, the ranks on each node" "$OUT" \
  "mpirun --host othernode:2,$here:1 -np 3 --mca plm rsh --mca plm_rsh_agent ssh"
run place -n 2 --launcher hydra --nodes "othernode,$here" --cores 0 --host "othernode:2,$here:1" -- ./a.out
expect_contains "place: hydra over ssh, one binding list" "$OUT" \
  "mpiexec.hydra -launcher ssh -hosts othernode:1,$here:1 -n 2 -bind-to user:0"
run place -n 1 --nodes "$here" --host "othernode:2,$here:1" -- ./a.out
expect_contains "place: one task here keeps the local rendering" "$OUT" "taskset --cpu-list 0 ./a.out"

# A step placed on another node of a hostfile runs through mpirun. This machine's own
# address is another node to berth (its node table knows this node by its names), and
# Open MPI starts a host that is one of its own addresses without ssh: the whole path
# runs here.
ip=$(hostname -I 2>/dev/null | awk '{print $1}')
if [[ -n $ip ]]; then
  cat >"$T/r.toml" <<X
[[step]]
name = "r-{i}"
foreach = { i = ["1", "2"] }
run = "echo {i} > {out.o}"
outputs = ["o"]
env = { OMPI_ALLOW_RUN_AS_ROOT = "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = "1" }
X
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    run run r.toml --host "$ip:1,$here:1" --format json
  expect_eq "run: steps on another node of a hostfile ran through mpirun" "$RC" 0
  expect_eq "run: ...one on each node" \
    "$(json "sorted((s['node'], s['state']) for s in j['steps'])" 2>/dev/null)" \
    "$(python3 -c "print(sorted([('$ip', 'executed'), ('$here', 'executed')]))")"
else
  echo "skip: this machine has no address for a second node"
fi

# A memory cap the local launcher does not enforce: one line for the run, and the
# step's own notice in the report.
cat >"$T/c.toml" <<X
[[step]]
name = "capped"
run = "echo hi > {out.o}"
outputs = ["o"]
memory_cap_mb = 100
X
run run c.toml --format json
expect_eq "capped step runs" "$RC" 0
expect_eq "one line on stderr says the cap is not enforced" \
  "$(grep -c 'memory_cap_mb = 100 is not enforced' <<<"$ERR")" 1
expect_contains "the step's notice is in the report" \
  "$(json "j['steps'][0].get('notices')")" "memory_cap_mb = 100 is not enforced"
expect_contains "and the run's notices" "$(json "j['notices']")" "capped"
finish
