#!/usr/bin/env bash
# slurm.sh start|stop|status - a throw-away Slurm cluster (Debian 12's Slurm 22.05) on
# this one machine, without systemd: munged, slurmctld and one slurmd per node run
# directly in the background, with every configuration, state, log, socket and pid file
# under $SLURM_DIR.
#
#   start   stops a previous instance from the same folder, writes fresh configuration,
#           clears the controller's state (job ids restart at 1), starts the daemons and
#           waits (bounded) until every node is idle and an srun works
#   stop    cancels the jobs, then stops the daemons named by the pid files, and only those
#   status  exit 0 when the controller answers
#
# Knobs (environment):
#   SLURM_DIR            folder for everything (default $BERTH_SERVICES_DIR/slurm,
#                        i.e. /tmp/berth-services/slurm)
#   SLURM_NODES          1: one node named after `hostname -s` (default)
#                        N>1: N emulated nodes n1..nN, one slurmd each on its own port;
#                        `hostname` is the same on all, $SLURMD_NODENAME tells them apart
#   SLURM_NODE_CPUS      CPUs per node (default: nproc); more than nproc only with N>1
#   SLURM_CTLD_PORT      slurmctld's port (default 6817); the slurmds take the next N
#   SLURM_FAKE_GPUS      N>0: N placeholder "gpu" GRES per node, so --gpus and
#                        --gpus-per-task are scheduled and CUDA_VISIBLE_DEVICES is set
#   SLURM_MPI_DEFAULT    MpiDefault (default none; pmix works, libpmix is installed)
#   SLURM_START_TIMEOUT  seconds start waits for readiness (default 90)
#
# Then: export SLURM_CONF=$SLURM_DIR/slurm.conf   (or: . $SLURM_DIR/env.sh)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SVC=slurm
# shellcheck source-path=SCRIPTDIR
. "$HERE/lib.sh"

D=${SLURM_DIR:-$SERVICES_BASE/slurm}
NODES=${SLURM_NODES:-1}
CTLD_PORT=${SLURM_CTLD_PORT:-6817}
TIMEOUT=${SLURM_START_TIMEOUT:-90}
MSOCK=$D/munge/run/munge.socket

# descendants PID: every process below PID, one per line.
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}

# any_slurmd: one of this cluster's slurmds is running.
any_slurmd() {
  local f
  for f in "$D"/run/slurmd-*.pid; do pid_from "$f" slurmd >/dev/null && return 0; done
  return 1
}

stop() {
  local ids f p s i strays=() left=()
  # Jobs first, while the controller still answers, so that slurmd ends their steps:
  # a step's slurmstepd, and the step's processes, outlive a stopped slurmd.
  if [[ -s $D/slurm.conf ]] && pid_from "$D/run/slurmctld.pid" slurmctld >/dev/null; then
    ids=$(SLURM_CONF=$D/slurm.conf timeout 10 squeue -h -o %A 2>/dev/null || true)
    if [[ -n $ids ]]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$D/slurm.conf timeout 10 scancel $ids >/dev/null 2>&1 || true
      # (bounded, and not at all without a slurmd to end them)
      for ((i = 0; i < 100; i++)); do
        [[ -z $(SLURM_CONF=$D/slurm.conf timeout 10 squeue -h -o %A 2>/dev/null) ]] && break
        any_slurmd || break
        sleep 0.1
      done
    fi
  fi
  for f in "$D"/run/slurmd-*.pid; do
    [[ -e $f ]] && stop_pidfile "$f" slurmd
  done
  # A step daemon still left (its job did not end in time, or the controller was gone)
  # has no pid file; it is this cluster's when its working folder is under $D (slurmd
  # starts it in its log folder). Its tasks go with it: they would outlive it.
  for s in /proc/[0-9]*; do
    [[ $(cat "$s/comm" 2>/dev/null) == slurmstepd ]] || continue
    [[ $(readlink "$s/cwd" 2>/dev/null) == "$D"/* ]] || continue
    p=${s#/proc/}
    strays+=("$p")
    mapfile -t -O "${#strays[@]}" strays < <(descendants "$p")
  done
  if ((${#strays[@]})); then
    kill -TERM "${strays[@]}" 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
      left=()
      for p in "${strays[@]}"; do alive "$p" && left+=("$p"); done
      ((${#left[@]})) || break
      sleep 0.1
    done
    ((${#left[@]} == 0)) || kill -KILL "${left[@]}" 2>/dev/null || true
    say "stopped ${#strays[@]} leftover step process(es): ${strays[*]}"
  fi
  stop_pidfile "$D/run/slurmctld.pid" slurmctld
  stop_pidfile "$D/munge/run/munged.pid" munged
  say "stopped (configuration and logs kept in $D)"
}

status() {
  if pid_from "$D/run/slurmctld.pid" slurmctld >/dev/null &&
     SLURM_CONF=$D/slurm.conf timeout 10 scontrol ping >/dev/null 2>&1; then
    echo "slurm: up ($(SLURM_CONF=$D/slurm.conf sinfo -h -o '%D nodes %T' | paste -sd, -)); SLURM_CONF=$D/slurm.conf"
  else
    echo "slurm: down"; return 1
  fi
}

start() {
  need munged mungekey munge unmunge slurmctld slurmd srun sinfo squeue scancel scontrol
  # Whatever this run started is stopped again if it fails, so nothing is left half up.
  stop_on_failure
  local host ncpu node_cpus
  host=$(hostname -s)
  ncpu=$(nproc)
  node_cpus=${SLURM_NODE_CPUS:-$ncpu}
  log "$(slurmd -V)"
  QUIET=1 stop

  # ------------------------------------------------------------------ munge
  mkdir -p "$D"/{munge/etc,munge/run,munge/lib,munge/log,state,spool,tmp,run,log}
  rm -f "$D"/log/*.log
  # A fresh controller state restarts job ids at 1, so the per-step sockets and folders
  # a previous cluster left (stepd.slurm.pmix.<job>.<step>, ...) would collide: clear them.
  rm -rf "${D:?}"/state/* "$D"/spool/* "$D"/tmp/*
  chmod 755 "$D" "$D/munge" "$D/munge/run"               # munged: the socket's folder must be a+x
  chmod 700 "$D/munge/etc" "$D/munge/lib" "$D/munge/log" # and the key's not group/other writable
  [[ -s $D/munge/etc/munge.key ]] || mungekey --create --keyfile="$D/munge/etc/munge.key" --force
  chmod 400 "$D/munge/etc/munge.key"
  munged --socket="$MSOCK" --key-file="$D/munge/etc/munge.key" \
    --log-file="$D/munge/log/munged.log" --pid-file="$D/munge/run/munged.pid" \
    --seed-file="$D/munge/lib/munged.seed"
  local i
  for ((i = 0; i < 50; i++)); do munge -S "$MSOCK" -n >/dev/null 2>&1 && break; sleep 0.1; done
  munge -S "$MSOCK" -n | unmunge -S "$MSOCK" >/dev/null || die "munged does not answer; see $D/munge/log/munged.log"
  log "munged up (pid $(cat "$D/munge/run/munged.pid"))"

  # ------------------------------------------------------------------ slurm.conf
  local mem_mb nodeline nodenames topo overrides taskplugin gresline gpus
  mem_mb=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  if ((NODES > 1)); then
    # Every emulated node needs its own slurmd port, hence one NodeName line per node;
    # they split the machine's memory.
    nodeline=""
    for ((i = 1; i <= NODES; i++)); do
      nodeline+="NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((CTLD_PORT + i)) CPUs=$node_cpus RealMemory=$((mem_mb / NODES)) State=UNKNOWN"$'\n'
    done
    nodenames=$(seq -f 'n%g' -s ' ' 1 "$NODES")
  else
    if [[ -z ${SLURM_NODE_CPUS:-} ]]; then
      # The topology slurmd detects: CPUs=N alone would read as N sockets of one core.
      topo=$(slurmd -C | head -1 | grep -o 'CPUs=.* ThreadsPerCore=[0-9]*')
    else
      topo="CPUs=$node_cpus"
    fi
    nodeline="NodeName=$host NodeAddr=127.0.0.1 $topo RealMemory=$mem_mb State=UNKNOWN"
    nodenames=$host
  fi
  # Emulated nodes claim CPUs and memory slurmd does not detect; without config_overrides
  # it drains them for the mismatch.
  overrides=""
  if ((NODES > 1 || node_cpus != ncpu)); then overrides="SlurmdParameters=config_overrides"; fi
  # task/affinity binds with sched_setaffinity and fails ("Unable to layout tasks on given
  # cpus") when a node claims more CPUs than the machine has.
  taskplugin=task/affinity
  if ((node_cpus > ncpu)); then taskplugin=task/none; fi

  gpus=${SLURM_FAKE_GPUS:-0}
  gresline=""
  rm -rf "${D:?}/dev" "$D/gres.conf"
  if ((gpus > 0)); then
    gresline="GresTypes=gpu"
    nodeline=$(printf '%s\n' "$nodeline" | sed "/^NodeName=/s/ State=UNKNOWN/ Gres=gpu:$gpus State=UNKNOWN/")
    # Slurm 22.05 drops a GPU without a device file and refuses a plain file ("not a
    # valid character or block device"): the placeholders are character devices 1:3,
    # i.e. /dev/null. Slurm then sets CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS by index.
    mkdir -p "$D/dev"
    for ((i = 0; i < gpus; i++)); do mknod "$D/dev/fakegpu$i" c 1 3; done
    echo "Name=gpu File=$D/dev/fakegpu[0-$((gpus - 1))]" >"$D/gres.conf"
  fi

  cat >"$D/slurm.conf" <<EOF
# written by scripts/services/slurm.sh $(date -u +%FT%TZ)
ClusterName=berthtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$((CTLD_PORT + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MSOCK
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
# One TmpFS per node: mpi/pmix makes spmix_appdir_<uid>_<job>.<step> in it on every node
# of a step, and the emulated nodes share one machine, so with one folder for all they
# would make the same folder and all but the first fail ("Cannot create client cli
# tmpdir ... File exists").
TmpFS=$D/tmp/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# No systemd and no cgroup delegation here: processes are tracked through /proc and
# bound with sched_setaffinity.
ProctrackType=proctrack/linuxproc
TaskPlugin=$taskplugin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=${SLURM_MPI_DEFAULT:-none}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
# A job that can never fit (srun -n3 on 2-CPU nodes) is refused instead of queued forever.
EnforcePartLimits=ALL
SlurmdTimeout=300
InactiveLimit=0
KillWait=5
MinJobAge=300
MessageTimeout=30
MailProg=/bin/true
$overrides
$gresline
$nodeline
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  echo "export SLURM_CONF=$D/slurm.conf" >"$D/env.sh"
  export SLURM_CONF=$D/slurm.conf
  log "wrote $SLURM_CONF (nodes: $nodenames)"

  # ------------------------------------------------------------------ daemons
  # -c: start clean, without saved state (the state folder is empty anyway).
  slurmctld -f "$SLURM_CONF" -c -L "$D/log/slurmctld.log"
  local n
  for n in $nodenames; do
    mkdir -p "$D/spool/$n" "$D/tmp/$n"
    if ((NODES > 1)); then slurmd -f "$SLURM_CONF" -c -N "$n"; else slurmd -f "$SLURM_CONF" -c; fi
  done
  log "daemons started; waiting (at most ${TIMEOUT}s) for every node to be idle"

  local deadline states
  deadline=$(($(date +%s) + TIMEOUT))
  while :; do
    states=$(sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [[ $states == "idle " ]] && break
    if ! before "$deadline"; then
      echo "[slurm] timed out; node states: '$states'" >&2
      tail -n 20 "$D"/log/*.log >&2 || true
      exit 1
    fi
    sleep 0.5
  done
  timeout 60 srun -N1 -n1 true || die "srun does not run a step; see $D/log/"
  log "up: $(sinfo -h -o '%D nodes, %c CPUs each' | head -1); export SLURM_CONF=$SLURM_CONF"
}

case "${1:-}" in
  start) start ;;
  stop) [[ ${2:-} == --quiet ]] && QUIET=1; stop ;;
  status) status ;;
  *) echo "usage: slurm.sh start|stop [--quiet]|status" >&2; exit 2 ;;
esac
