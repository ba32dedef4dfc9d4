#!/usr/bin/env bash
# Inside a real Grid Engine parallel-environment job (scripts/services.sh starts one),
# berth renders a launch of several ranks for the MPI implementation's own launcher
# (spec 02 §8) — Open MPI's mpirun, found by `mpirun --version`, reaching the PE's hosts
# through Grid Engine's qrsh; MPICH's hydra with `-launcher sge` when asked — and the
# rendered command, run as printed, is one 2-rank MPI job over the PE's host(s) (the
# local Grid Engine has one host with 2 slots), each rank bound to the core berth
# placed it on. Fails, saying why, when Grid Engine does not answer or mpirun is absent.
. "$(dirname "$0")/common.sh"
need_sge
if ! command -v mpirun >/dev/null || ! command -v mpicc.openmpi >/dev/null; then
  echo "FAIL: Open MPI's mpirun (or mpicc.openmpi) is absent; scripts/install-deps.sh installs it" >&2
  exit 1
fi
HYDRA=0
command -v mpiexec.hydra >/dev/null && command -v mpicc.mpich >/dev/null && HYDRA=1

W=$T; chmod 755 "$W"
mpicc.openmpi -o "$W/probe_ompi" "$E2E/data/mpi/probe.c"
((HYDRA)) && mpicc.mpich -o "$W/probe_mpich" "$E2E/data/mpi/probe.c"
# Each rank says which it is, the CPUs it may run on and the GPUs it may see (none,
# explicitly: the variable set empty).
# shellcheck disable=SC2016 # expanded by each rank
BIND='echo "${OMPI_COMM_WORLD_RANK:-$PMI_RANK} $(grep Cpus_allowed_list /proc/self/status | cut -f2) gpus=[${CUDA_VISIBLE_DEVICES-unset}]"'
cat >"$W/job.sh" <<X
#!/bin/bash
cd "$W"
# Open MPI as root needs its consent, as under any mpirun.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$BERTH" machine --format json >machine.json 2>machine.err
# The pool places 2 ranks on the PE's slots; the rendering, then the command it printed.
"$BERTH" place --auto -n 2 --format json -- "$W/probe_ompi" hello >ompi.json 2>ompi.err
"$BERTH" place --auto -n 2 -- "$W/probe_ompi" hello >ompi.sh 2>>ompi.err
bash ompi.sh >ompi.out 2>>ompi.err; echo \$? >ompi.rc
"$BERTH" place --auto -n 2 -- sh -c '$BIND' >bind.sh 2>bind.err
bash bind.sh >bind.out 2>>bind.err; echo \$? >bind.rc
if (($HYDRA)); then
  "$BERTH" place --launcher hydra --auto -n 2 --format json -- "$W/probe_mpich" hello >hydra.json 2>hydra.err
  "$BERTH" place --launcher hydra --auto -n 2 -- "$W/probe_mpich" hello >hydra.sh 2>>hydra.err
  bash hydra.sh >hydra.out 2>>hydra.err; echo \$? >hydra.rc
  "$BERTH" place --launcher hydra --auto -n 2 -- sh -c '$BIND' >hbind.sh 2>>hydra.err
  bash hbind.sh >hbind.out 2>>hydra.err
fi
X
chmod 755 "$W/job.sh"
if ! timeout 180 qsub -sync y -pe mpi 2 -cwd -o "$W/out" -e "$W/err" "$W/job.sh" >"$W/qsub.log" 2>&1; then
  fail "qsub failed: $(cat "$W/qsub.log")"
  finish
fi

OUT=$(cat "$W/machine.json")
expect_eq "machine: Open MPI's mpirun is the launcher" "$(json "j['launcher']['kind']")" mpirun
expect_eq "machine: ...because the allocation is Grid Engine's" \
  "$(json "j['launcher']['chosen_because']")" "the allocation is Grid Engine's and mpirun is present"
expect_eq "machine: ...and says what it wires up with" "$(json "j['mpi_wireup']['by']")" "mpirun (Open MPI)"

OUT=$(cat "$W/ompi.json")
ERR=$(cat "$W/ompi.err")
expect_eq "ompi: rendered for mpirun" "$(json "j['argv'][0]")" mpirun
expect_eq "ompi: cpu-binding" "$(json "j['mechanism']")" cpu-binding
expect_contains "ompi: Grid Engine's launch (qrsh)" "$(json "' '.join(j['argv'])")" \
  "--mca plm rsh --mca plm_rsh_disable_qrsh 0"
expect_contains "ompi: the cores berth placed, in a rankfile" "$(json "' '.join(j['argv'])")" \
  "--use-hwthread-cpus --mca rmaps_rank_file_physical 1 --rankfile "
# What the placement asks for: each node with the ranks it runs (tasks fill each node
# in turn), and each rank's core.
read_placement() {
  python3 - "$1" <<'P'
import json, sys
j = json.load(open(sys.argv[1]))
def ids(s):
    out = []
    for part in s.split(','):
        a, _, b = part.partition('-')
        out += range(int(a), int(b or a) + 1)
    return out
left, rank, hosts, cores = 2, 0, [], []
for node, c in zip(j['placement']['nodes'], j['placement']['cores']):
    k = min(len(ids(c)), left)
    left -= k
    hosts.append('%s:%d' % (node, k))
    for i in range(k):
        cores.append('%d %d gpus=[]' % (rank, ids(c)[i]))
        rank += 1
print(','.join(hosts))
print('\n'.join(cores))
P
}
placed=$(read_placement "$W/ompi.json")
hosts=$(head -1 <<<"$placed")
want=$(tail -n +2 <<<"$placed")
expect_contains "ompi: --host names the placement's nodes and their ranks" \
  "$(json "' '.join(j['argv'])")" "--host $hosts -np 2"

expect_eq "ompi: the rendered command ran" "$(cat "$W/ompi.rc")" 0
expect_eq "ompi: one 2-rank job, allreduce and ring right" "$(sort "$W/ompi.out")" \
"rank 0 of 2 app 0 sum 1 ring 1
rank 1 of 2 app 0 sum 1 ring 1"
[[ $(cat "$W/ompi.rc") == 0 ]] || sed 's/^/  ompi stderr: /' "$W/ompi.err" >&2

# Each rank bound to its own core of the placement, ranks in order.
expect_eq "ompi: each rank bound to the core berth placed it on, no GPU" "$(sort -n "$W/bind.out")" \
  "$want"

if ((HYDRA)); then
  OUT=$(cat "$W/hydra.json")
  ERR=$(cat "$W/hydra.err")
  expect_eq "hydra: rendered for mpiexec.hydra" "$(json "j['argv'][0]")" mpiexec.hydra
  expect_contains "hydra: Grid Engine's launcher, the hosts, one binding list" \
    "$(json "' '.join(j['argv'])")" "-launcher sge -hosts $hosts -n 2 -bind-to user:"
  expect_eq "hydra: the rendered command ran" "$(cat "$W/hydra.rc")" 0
  expect_eq "hydra: one 2-rank job" "$(sort "$W/hydra.out")" \
"rank 0 of 2 app 0 sum 1 ring 1
rank 1 of 2 app 0 sum 1 ring 1"
  expect_eq "hydra: each rank bound to the core berth placed it on, no GPU" \
    "$(sort -n "$W/hbind.out")" "$want"
else
  echo "skip hydra: mpiexec.hydra or mpicc.mpich is absent"
fi
finish
