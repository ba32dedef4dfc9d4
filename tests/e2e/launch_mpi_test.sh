#!/usr/bin/env bash
# berth launch runs MPI programs as one job (spec 07): Open MPI's ranks through the
# embedded PMIx server, MPICH's through the PMI socket, both compiled here and now.
# Ranks and size right, an allreduce and a ring right, MPMD as one MPI_COMM_WORLD with
# app numbers; MPI_Abort's code is the job's; a rank killed after MPI_Init, and one
# exiting without MPI_Finalize while the others wait in a barrier, end the job in
# bounded time; MPI_Comm_spawn is refused, never a hang; --mpi none gives singletons;
# nothing is left behind.
. "$(dirname "$0")/common.sh"

# Each implementation's compiler must be there: scripts/install-deps.sh installs both.
for cc in mpicc.openmpi mpicc.mpich; do
  command -v $cc >/dev/null || { echo "FAIL: $cc is missing; run scripts/install-deps.sh" >&2; exit 1; }
done
src=$E2E/data/mpi/probe.c
mpicc.openmpi -o "$T/probe_ompi" "$src"
mpicc.mpich -o "$T/probe_mpich" "$src"
# Open MPI as root needs its consent, as under mpirun.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MARK=berth-mpi-e2e-$$

# launch ARGS...: runs berth launch bounded by a timeout, for its time too.
launch() {
  local t0 t1
  t0=$(date +%s%N)
  run launch --oversubscribe "$@"
  t1=$(date +%s%N)
  ELAPSED_MS=$(( (t1 - t0) / 1000000 ))
}

for impl in ompi mpich; do
  P=$T/probe_$impl
  launch -n 4 "$P" hello $MARK
  expect_eq "$impl: exit 0" "$RC" 0
  expect_eq "$impl: four ranks of one job, allreduce and ring right" "$(sort <<<"$OUT")" \
"rank 0 of 4 app 0 sum 6 ring 6
rank 1 of 4 app 0 sum 6 ring 6
rank 2 of 4 app 0 sum 6 ring 6
rank 3 of 4 app 0 sum 6 ring 6"

  # MPMD: two apps, one MPI_COMM_WORLD, each rank its app number.
  launch -n 2 "$P" hello : -n 2 -- "$P" hello
  expect_eq "$impl: MPMD exit 0" "$RC" 0
  expect_eq "$impl: MPMD is one world with app numbers" "$(sort <<<"$OUT")" \
"rank 0 of 4 app 0 sum 6 ring 6
rank 1 of 4 app 0 sum 6 ring 6
rank 2 of 4 app 1 sum 6 ring 6
rank 3 of 4 app 1 sum 6 ring 6"

  launch -n 3 "$P" abort 1 7 $MARK
  expect_eq "$impl: MPI_Abort's code is the job's" "$RC" 7
  expect_contains "$impl: stderr names the aborting rank" "$ERR" "rank 1 ($P) on"
  expect_contains "$impl: stderr says MPI_Abort" "$ERR" "called MPI_Abort with code 7"

  launch --timeout 60 -n 3 "$P" kill 1 $MARK
  expect_eq "$impl: a rank killed after MPI_Init ends the job (128+9)" "$RC" 137
  expect_contains "$impl: the killed rank is named" "$ERR" "rank 1 ($P)"
  expect_eq "$impl: ...in bounded time" "$((ELAPSED_MS < 20000))" 1

  launch --timeout 60 -n 3 "$P" nofinalize 1 $MARK
  expect_eq "$impl: an exit without MPI_Finalize fails the job" "$RC" 1
  expect_contains "$impl: ...and says so" "$ERR" "rank 1 ($P) on"
  expect_contains "$impl: ...without MPI_Finalize" "$ERR" "without calling MPI_Finalize"
  expect_eq "$impl: ...in bounded time" "$((ELAPSED_MS < 20000))" 1

  launch --timeout 60 -n 2 "$P" spawn $MARK
  expect_contains "$impl: MPI_Comm_spawn is refused to the rank" "$OUT" "spawn returned an error"
  expect_eq "$impl: ...not a hang (no timeout)" "$((RC != 124))" 1

  launch --mpi none -n 2 "$P" hello
  expect_eq "$impl: --mpi none gives singletons" "$(cut -d' ' -f1-4 <<<"$OUT")" \
"rank 0 of 1
rank 0 of 1"
done
# Open MPI's spawn request reaches the PMIx server, which says what it refused.
launch --timeout 60 -n 2 "$T/probe_ompi" spawn
expect_contains "ompi: berth says what it refused" "$ERR" "asked to spawn processes (MPI_Comm_spawn)"

# The wire-up a rank gets comes before the user's directives, which still win.
run launch --set-env PMI_SIZE=99 -n 2 sh -c 'echo "$PMI_SIZE ${PMIX_NAMESPACE:+pmix}"'
expect_eq "directives win over the wire-up" "$OUT" $'99 pmix\n99 pmix'
run launch -n 1 sh -c 'echo "${PMI_FD:-none} ${PMIX_NAMESPACE:-none}"'
expect_eq "a job of one rank is not wired under auto" "$OUT" "none none"
run launch --mpi pmi1 -n 1 sh -c 'echo "${PMI_FD:-none} ${PMIX_NAMESPACE:-none}"'
expect_eq "--mpi pmi1: the PMI socket only" "$OUT" "3 none"
run launch --mpi pmix -n 1 sh -c 'echo "${PMI_FD:-none} ${PMIX_NAMESPACE:+pmix}"'
expect_eq "--mpi pmix: PMIx only" "$OUT" "none pmix"
expect_bad_input "--mpi names the choices" "pmix" launch --mpi mpich -n 1 true

# Nothing of any of these jobs is left.
sleep 0.2
left=$(pgrep -f "$MARK" || true)
expect_eq "no process is left behind" "$left" ""
finish
