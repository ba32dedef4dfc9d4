#!/usr/bin/env bash
# sge.sh start|stop|status - Grid Engine (Debian 12's Son of Grid Engine 8.1.9) on this
# one machine, without systemd, with a parallel environment "mpi" whose jobs see
# $PE_HOSTFILE.
#
#   start   stops a previous instance, starts sge_qmaster, configures it, starts
#           sge_execd and waits (bounded) until a two-slot PE job has run
#   stop    deletes the jobs, then stops the two daemons by their pid files; those are
#           in Debian's spool, so there is one Grid Engine per machine whatever SGE_DIR says
#   status  exit 0 when the qmaster answers
#
# Debian's packages fix where Grid Engine lives (SGE_ROOT=/var/lib/gridengine, cell
# "default", spool /var/spool/gridengine); the cell is created when the packages are
# installed (scripts/install-deps.sh answers their questions). This script's own files
# (configuration it applies, the smoke job, env.sh) go to $SGE_DIR (default
# $BERTH_SERVICES_DIR/sge, i.e. /tmp/berth-services/sge). SGE_START_TIMEOUT: seconds
# start waits (default 90).
#
# Then: . $SGE_DIR/env.sh; qsub -pe mpi 2 job.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SVC=sge
# shellcheck source-path=SCRIPTDIR
. "$HERE/lib.sh"

F=${SGE_DIR:-$SERVICES_BASE/sge}
TIMEOUT=${SGE_START_TIMEOUT:-90}
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
SPOOL=/var/spool/gridengine

stop() {
  if command -v qdel >/dev/null && [[ -s $SPOOL/qmaster/qmaster.pid ]]; then
    timeout 10 qdel -u '*' >/dev/null 2>&1 || true
  fi
  local f
  for f in "$SPOOL"/execd/*/execd.pid; do
    [[ -e $f ]] && stop_pidfile "$f" sge_execd 15
  done
  stop_pidfile "$SPOOL/qmaster/qmaster.pid" sge_qmaster 15
  say "stopped"
}

status() {
  if pid_from "$SPOOL/qmaster/qmaster.pid" sge_qmaster >/dev/null && timeout 10 qstat >/dev/null 2>&1; then
    echo "sge: up ($(qhost 2>/dev/null | awk 'NR > 3' | wc -l) exec host(s)); . $F/env.sh"
  else
    echo "sge: down"; return 1
  fi
}

# qc ARGS...: qconf, quiet unless it fails.
qc() { local o; o=$(qconf "$@" 2>&1) || { echo "qconf $*: $o" >&2; return 1; }; }

start() {
  need sge_qmaster sge_execd qconf qsub qstat qhost qmod qdel
  [[ -s $SGE_ROOT/$SGE_CELL/common/bootstrap ]] ||
    die "no Grid Engine cell in $SGE_ROOT/$SGE_CELL; the packages make it when installed with their questions answered: run scripts/install-deps.sh"
  stop_on_failure
  local h ncpu deadline
  h=$(hostname -s)
  ncpu=$(nproc)
  mkdir -p "$F"
  QUIET=1 stop

  # 127.0.0.1 resolves back to "localhost" here while gethostname() says "$h", and the
  # communication library then refuses every client ("access denied ... not identical
  # to clients host name"). host_aliases makes the two names one Grid Engine host.
  echo "$h localhost" >"$SGE_ROOT/$SGE_CELL/common/host_aliases"
  echo "$h" >"$SGE_ROOT/$SGE_CELL/common/act_qmaster"
  chown sgeadmin:sgeadmin "$SGE_ROOT/$SGE_CELL/common/host_aliases" "$SGE_ROOT/$SGE_CELL/common/act_qmaster"
  mkdir -p /var/run/gridengine "$SPOOL/execd"
  chown sgeadmin:sgeadmin /var/run/gridengine "$SPOOL/execd"

  # ------------------------------------------------------------------ qmaster
  # It daemonizes and drops to the user sgeadmin.
  /usr/sbin/sge_qmaster
  deadline=$(($(date +%s) + TIMEOUT))
  until qconf -sh >/dev/null 2>&1; do
    before "$deadline" || { tail "$SPOOL/qmaster/messages" >&2 || true; die "sge_qmaster does not answer"; }
    sleep 0.3
  done
  log "sge_qmaster up (pid $(cat "$SPOOL/qmaster/qmaster.pid"))"

  # ------------------------------------------------------------------ configuration
  # Before execd starts, because it caches the global configuration. The default
  # min_uid/min_gid of 1000 make a root job fail "before job" and put the queue in
  # state E; the tests run as root.
  qconf -sconf global | grep -v '^#' >"$F/global"
  sed -i -e 's/^min_uid .*/min_uid                      0/' \
         -e 's/^min_gid .*/min_gid                      0/' "$F/global"
  qc -Mconf "$F/global"
  # The scheduler runs every 15 s by default: every test job would wait that long.
  qconf -ssconf >"$F/sched"
  sed -i -e 's/^schedule_interval .*/schedule_interval                 0:0:1/' \
         -e 's/^flush_submit_sec .*/flush_submit_sec                  1/' \
         -e 's/^flush_finish_sec .*/flush_finish_sec                  1/' "$F/sched"
  qc -Msconf "$F/sched"
  qconf -sh | grep -qx "$h" || qc -ah "$h"
  qconf -ss 2>/dev/null | grep -qx "$h" || qc -as "$h"
  # The parallel environment the tests submit to: slots filled host by host.
  cat >"$F/pe_mpi" <<'EOF'
pe_name            mpi
slots              9999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $fill_up
control_slaves     TRUE
job_is_first_task  FALSE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
EOF
  if qconf -sp mpi >/dev/null 2>&1; then qc -Mp "$F/pe_mpi"; else qc -Ap "$F/pe_mpi"; fi
  cat >"$F/q_all" <<EOF
qname                 all.q
hostlist              $h
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               mpi
rerun                 FALSE
slots                 $ncpu
tmpdir                /tmp
shell                 /bin/bash
prolog                NONE
epilog                NONE
shell_start_mode      unix_behavior
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:60
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
s_rt                  INFINITY
h_rt                  INFINITY
s_cpu                 INFINITY
h_cpu                 INFINITY
s_fsize               INFINITY
h_fsize               INFINITY
s_data                INFINITY
h_data                INFINITY
s_stack               INFINITY
h_stack               INFINITY
s_core                INFINITY
h_core                INFINITY
s_rss                 INFINITY
h_rss                 INFINITY
s_vmem                INFINITY
h_vmem                INFINITY
EOF
  if qconf -sq all.q >/dev/null 2>&1; then qc -Mq "$F/q_all"; else qc -Aq "$F/q_all"; fi
  log "configured: min_uid 0, 1 s scheduler, PE mpi, all.q with $ncpu slots"

  # ------------------------------------------------------------------ execd
  # On its first start it registers itself as an execution host (the host is an
  # administrative host by now).
  /usr/sbin/sge_execd
  until qhost -h "$h" 2>/dev/null | awk -v h="$h" '$1 == h && $4 != "-" { ok = 1 } END { exit !ok }'; do
    before "$deadline" || die "sge_execd does not report to the qmaster"
    sleep 0.3
  done
  qmod -c all.q >/dev/null 2>&1 || true # clears an E state an earlier failed job left
  log "sge_execd up"

  # ------------------------------------------------------------------ a PE job
  local out=$F/smoke.out jid
  rm -f "$out"
  # A script rather than -b y: qsub -b y splits "bash -c '...'" again.
  # shellcheck disable=SC2016 # $PE_HOSTFILE is the job's
  printf '#!/bin/bash\ncat "$PE_HOSTFILE"\n' >"$F/smoke.sh"
  jid=$(qsub -terse -S /bin/bash -pe mpi 2 -o "$out" -j y "$F/smoke.sh")
  while qstat -j "$jid" >/dev/null 2>&1; do
    before "$deadline" || { qstat -f -explain E >&2 || true; die "the PE job $jid did not finish"; }
    sleep 0.2
  done
  grep -q " 2 all.q@" "$out" 2>/dev/null || { cat "$out" >&2 2>/dev/null || true; die "the PE job's PE_HOSTFILE is not the expected one"; }
  echo "export SGE_ROOT=$SGE_ROOT SGE_CELL=$SGE_CELL" >"$F/env.sh"
  log "up: a PE job ran (PE_HOSTFILE: $(cat "$out")); . $F/env.sh"
}

case "${1:-}" in
  start) start ;;
  stop) [[ ${2:-} == --quiet ]] && QUIET=1; stop ;;
  status) status ;;
  *) echo "usage: sge.sh start|stop [--quiet]|status" >&2; exit 2 ;;
esac
