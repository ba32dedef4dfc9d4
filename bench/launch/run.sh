#!/bin/sh
# Runs bench_launch from an existing build, then times the tools berth replaces; builds
# nothing.
#
#   bench/launch/run.sh [BUILD_DIR] [PATH_TO_BERTH]
#
# BUILD_DIR defaults to build/release. PATH_TO_BERTH ("auto" = BUILD_DIR/berth) adds
# `berth launch -n 64 /bin/true` against Open MPI's mpirun, and a 16-rank MPI hello
# (MPI_Init, an allreduce, a ring, MPI_Finalize; compiled here with both mpiccs) under
# berth launch against mpirun (Open MPI) and mpiexec.hydra (MPICH), side by side.
# Missing tools (GNU parallel, mpirun, a berth with `launch`) are skipped with a message. BENCH_ARGS is passed to
# bench_launch (e.g. BENCH_ARGS="--runs 1 --rss-mib 0" for a quick look).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
bin=$build/bench/bench_launch
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin not found; build it first (cmake --build $build --target bench_launch)" >&2
  exit 2
fi
berth=${2:-}
if [ "$berth" = auto ]; then
  berth=$build/berth
fi
count=2000
ranks=64
runs=3

now() { date +%s.%N; }
# best_of N CMD...: the shortest wall time of N runs of CMD, in seconds; fails if CMD does.
best_of() {
  n=$1
  shift
  best=
  i=0
  while [ "$i" -lt "$n" ]; do
    t0=$(now)
    "$@" >/dev/null 2>&1 || return 1
    t1=$(now)
    best=$(awk -v a="$t0" -v b="$t1" -v best="$best" \
      'BEGIN { t = b - a; if (best == "" || t < best) best = t; printf "%.4f", best }')
    i=$((i + 1))
  done
  echo "$best"
}
status=0

# 1. The spawner, in process, against the raw posix_spawn loop, vfork and fork.
# shellcheck disable=SC2086 # BENCH_ARGS is a list of options
out=$("$bin" ${BENCH_ARGS:-}) || status=1
echo "$out"
spawner_rate=$(echo "$out" | awk '$1 == "berth_spawner_per_s" { print $2 }')

# 2. GNU parallel starting the same 2000 x /bin/true, two at a time.
echo
echo "GNU parallel, $count x /bin/true, -j2:"
if ! command -v parallel >/dev/null 2>&1; then
  echo "  skipped: no 'parallel' on PATH (Debian: apt-get install parallel)"
elif [ -z "$spawner_rate" ]; then
  echo "  skipped: bench_launch printed no berth_spawner_per_s"
else
  list=$(seq "$count")
  # shellcheck disable=SC2086 # the list is meant to split
  if t=$(best_of 1 parallel --will-cite -j2 /bin/true ::: $list); then
    awk -v t="$t" -v n="$count" -v ours="$spawner_rate" 'BEGIN {
      rate = n / t
      printf "  %-28s %9.0f /s  (%.2f s)\n", "parallel -j2", rate, t
      printf "  berth spawner is %.1fx GNU parallel'\''s rate\n", ours / rate }'
  else
    echo "  parallel failed"
    status=1
  fi
fi

# 3. A 64-rank job of /bin/true: berth launch against mpirun.
echo
echo "$ranks ranks of /bin/true, wall time, best of $runs:"
mpirun_t=
if ! command -v mpirun >/dev/null 2>&1; then
  echo "  skipped mpirun: not on PATH (Debian: apt-get install openmpi-bin)"
elif mpirun_t=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 best_of "$runs" \
    timeout -k 5 60 mpirun --oversubscribe --mca odls_base_num_threads 0 -n "$ranks" /bin/true); then
  printf "  %-28s %8.1f ms\n" "mpirun --oversubscribe" "$(awk -v t="$mpirun_t" 'BEGIN { print t * 1000 }')"
else
  echo "  mpirun failed or timed out"
  mpirun_t=
fi
if [ -z "$berth" ]; then
  echo "  skipped berth launch: no PATH_TO_BERTH given"
elif [ ! -x "$berth" ] || ! "$berth" launch --help >/dev/null 2>&1; then
  echo "  skipped berth launch: $berth has no 'launch' command"
elif berth_t=$(best_of "$runs" "$berth" launch --oversubscribe -n "$ranks" /bin/true); then
  printf "  %-28s %8.1f ms\n" "berth launch" "$(awk -v t="$berth_t" 'BEGIN { print t * 1000 }')"
  if [ -n "$mpirun_t" ]; then
    awk -v b="$berth_t" -v m="$mpirun_t" 'BEGIN {
      r = b / m
      printf "  berth launch takes %.2fx mpirun'\''s wall time (target <= 0.5x: %s)\n", r,
        r <= 0.5 ? "met" : "MISSED" }'
  fi
else
  echo "  berth launch failed"
  status=1
fi

# 4. A 16-rank MPI hello: the whole job's wall time, berth launch against each MPI's
# own launcher, interleaved, best of 5. Each MPI_Init dominates on two cores; the
# /bin/true line above is the launchers' own overhead.
mpi_ranks=16
mpi_runs=5
echo
echo "$mpi_ranks ranks of an MPI hello (init, allreduce, ring, finalize), wall time, best of $mpi_runs:"
probe=$root/tests/e2e/data/mpi/probe.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# compare NAME CC PEER...: compiles the probe with CC and times berth launch against
# the peer launcher's command line (the binary appended to both).
compare() {
  name=$1 cc=$2
  shift 2
  if [ -z "$berth" ] || ! "$berth" launch --help >/dev/null 2>&1; then
    echo "  skipped $name: no berth with launch given"
    return
  fi
  if ! command -v "$cc" >/dev/null 2>&1 || ! command -v "$1" >/dev/null 2>&1; then
    echo "  skipped $name: $cc or $1 is not installed (scripts/install-deps.sh installs both)"
    status=1
    return
  fi
  "$cc" -O2 -o "$tmp/$name" "$probe" || { echo "  $name: $cc failed"; status=1; return; }
  b_best= p_best=
  i=0
  while [ "$i" -lt "$mpi_runs" ]; do
    # A failure is a finding: its exit status and last lines are printed.
    t0=$(now)
    if ! timeout -k 5 60 "$berth" launch --oversubscribe -n "$mpi_ranks" "$tmp/$name" hello \
        >"$tmp/out" 2>&1; then
      echo "  berth launch of $name failed (exit $?):"; tail -5 "$tmp/out" | sed 's/^/    /'
      status=1
      return
    fi
    b=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.4f", b - a }')
    t0=$(now)
    if ! timeout -k 5 60 "$@" "$tmp/$name" hello >"$tmp/out" 2>&1; then
      echo "  $1 of $name failed (exit $?):"; tail -5 "$tmp/out" | sed 's/^/    /'
      status=1
      return
    fi
    p=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.4f", b - a }')
    b_best=$(awk -v a="$b" -v m="$b_best" 'BEGIN { print (m == "" || a < m) ? a : m }')
    p_best=$(awk -v a="$p" -v m="$p_best" 'BEGIN { print (m == "" || a < m) ? a : m }')
    i=$((i + 1))
  done
  awk -v b="$b_best" -v p="$p_best" -v n="$name" -v peer="$1" 'BEGIN {
    printf "  %-8s berth launch %7.1f ms   %-14s %7.1f ms   ratio %.2fx\n", n, b * 1000, peer,
      p * 1000, b / p }'
}
compare openmpi mpicc.openmpi mpirun --oversubscribe --mca odls_base_num_threads 0 -n "$mpi_ranks"
compare mpich mpicc.mpich mpiexec.hydra -n "$mpi_ranks"
echo "  (target <= 0.5x mpirun: the ranks' own MPI_Init is most of the job on two cores;"
echo "   the 64 x /bin/true line is the part a launcher controls)"
exit $status
