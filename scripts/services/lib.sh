# shellcheck shell=bash
# lib.sh - helpers the service scripts (slurm.sh, sge.sh, swift.sh, s3.sh) source; not
# run on its own. The caller sets SVC (its name, for messages) before sourcing.
#
# Every service keeps its files under $BERTH_SERVICES_DIR/<name> (default
# /tmp/berth-services/<name>) and is stopped through the pid files its daemons wrote,
# never by process name: a process is only signalled when a pid file names it and it is
# still the program that wrote the file, so a stop leaves alone whatever else runs on the
# machine, other Slurm or Swift servers included.

# shellcheck disable=SC2034 # used by the scripts that source this
SERVICES_BASE=${BERTH_SERVICES_DIR:-/tmp/berth-services}
# The daemons live in sbin, which a non-root PATH often lacks.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac
QUIET=${QUIET:-0}
T0=$(date +%s.%N)

# log MSG: a progress line with the seconds since the script started.
log() {
  awk -v t0="$T0" -v t1="$(date +%s.%N)" -v s="$SVC" -v m="$*" \
    'BEGIN { printf "[%s %5.1fs] %s\n", s, t1 - t0, m }'
}
say() { ((QUIET)) || echo "[$SVC] $*"; }
die() { echo "[$SVC] $*" >&2; exit 1; }

# need CMD...: every command must be installed; the scripts never install anything.
need() {
  local c missing=()
  for c; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  ((${#missing[@]} == 0)) ||
    die "not installed: ${missing[*]}; run scripts/install-deps.sh (as root, or with sudo) first"
}

# alive PID: the process exists and has not exited (a zombie has).
alive() {
  [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
  [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# pid_from FILE WANT: the pid in FILE, if that process is alive and is still WANT (its
# name is WANT, or its command line contains WANT). A pid file can outlive its daemon
# and the pid be reused by an unrelated program; that one is left alone.
pid_from() {
  local f=$1 want=$2 p
  [[ -s $f ]] || return 1
  p=$(tr -dc '0-9' <"$f")
  alive "$p" || return 1
  if [[ $(cat "/proc/$p/comm" 2>/dev/null) != "$want" ]]; then
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$want" || return 1
  fi
  echo "$p"
}

# stop_pid PID NAME [SECONDS]: SIGTERM, then SIGKILL if it is still there after SECONDS
# (default 10).
stop_pid() {
  local p=$1 name=$2 secs=${3:-10} i
  kill -TERM "$p" 2>/dev/null || return 0
  for ((i = 0; i < secs * 10; i++)); do
    alive "$p" || { say "stopped $name (pid $p)"; return 0; }
    sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do alive "$p" || break; sleep 0.1; done
  say "killed $name (pid $p) after ${secs}s"
}

# stop_pidfile FILE WANT [SECONDS]: stop the daemon FILE names (if it is still WANT),
# then remove FILE.
stop_pidfile() {
  local p
  if p=$(pid_from "$1" "$2"); then stop_pid "$p" "$2" "${3:-10}"; fi
  rm -f "$1"
}

# stop_on_failure: from here on, a start that fails stops what it started (through the
# caller's stop function), so nothing is left half up.
stop_on_failure() { trap _stop_if_failed EXIT; }
_stop_if_failed() {
  local rc=$?
  ((rc)) || return 0
  echo "[$SVC] start failed (exit $rc); stopping what it started" >&2
  QUIET=1 stop || true
}

# before DEADLINE: true while the clock (whole seconds) has not passed DEADLINE.
before() { (($(date +%s) <= $1)); }
