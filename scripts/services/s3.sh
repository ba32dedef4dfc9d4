#!/usr/bin/env bash
# s3.sh install|start|stop|status - s3rver 3.7.1 (from npm), a small S3 server, on
# 127.0.0.1:$S3_PORT (default 4568): path-style, key S3RVER, secret S3RVER (it knows
# the key but checks no signature: any secret, or none, passes).
#
#   install  installs s3rver@3.7.1 with npm into $S3_DIR; nothing when it is there
#            already (scripts/install-deps.sh runs this)
#   start    stops a previous instance, starts s3rver with empty storage (unless
#            S3_KEEP_DATA=1), creates the buckets $S3_BUCKETS (default "testbucket")
#            and waits (bounded) until it answers; never installs anything
#   stop     stops it by its pid file
#   status   exit 0 when it answers
#
# Everything is under $S3_DIR (default $BERTH_SERVICES_DIR/s3, i.e.
# /tmp/berth-services/s3). S3_START_TIMEOUT: seconds start waits (default 30).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SVC=s3
# shellcheck source-path=SCRIPTDIR
. "$HERE/lib.sh"

D=${S3_DIR:-$SERVICES_BASE/s3}
PORT=${S3_PORT:-4568}
BUCKETS=${S3_BUCKETS:-testbucket}
TIMEOUT=${S3_START_TIMEOUT:-30}
VERSION=3.7.1
BIN=$D/node_modules/.bin/s3rver

installed() {
  [[ -x $BIN ]] &&
    [[ $(node -p "require('$D/node_modules/s3rver/package.json').version" 2>/dev/null) == "$VERSION" ]]
}

install() {
  need node npm
  if installed; then return 0; fi
  mkdir -p "$D"
  [[ -f $D/package.json ]] || echo '{"name":"berth-test-s3","private":true}' >"$D/package.json"
  echo "[s3] installing s3rver@$VERSION into $D"
  (cd "$D" && npm install --no-audit --no-fund --silent "s3rver@$VERSION" >/dev/null)
  installed || die "npm did not install s3rver@$VERSION into $D"
}

stop() {
  stop_pidfile "$D/s3rver.pid" s3rver 5
  say "stopped"
}

status() {
  if pid_from "$D/s3rver.pid" s3rver >/dev/null && curl -sf -o /dev/null "http://127.0.0.1:$PORT/"; then
    echo "s3: up (s3rver on http://127.0.0.1:$PORT, buckets: $BUCKETS)"
  else
    echo "s3: down"; return 1
  fi
}

start() {
  need node curl
  installed || die "s3rver@$VERSION is not installed in $D; run scripts/install-deps.sh (or scripts/services/s3.sh install)"
  stop_on_failure
  QUIET=1 stop
  if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
    die "port $PORT is already served by a process not started from $D"
  fi
  [[ ${S3_KEEP_DATA:-0} == 1 ]] || rm -rf "$D/data"
  mkdir -p "$D/data"
  local args=(-d "$D/data" -a 127.0.0.1 -p "$PORT") b
  for b in $BUCKETS; do args+=(--configure-bucket "$b"); done
  # setsid: its own session, so it outlives the shell that started it.
  (cd "$D" && exec setsid "$BIN" "${args[@]}" >"$D/s3rver.log" 2>&1 </dev/null) &
  echo $! >"$D/s3rver.pid"
  local deadline
  deadline=$(($(date +%s) + TIMEOUT))
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/"; do
    if ! pid_from "$D/s3rver.pid" s3rver >/dev/null || ! before "$deadline"; then
      cat "$D/s3rver.log" >&2 || true
      die "s3rver did not come up"
    fi
    sleep 0.2
  done
  for b in $BUCKETS; do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/$b" || die "bucket $b is missing"
  done
  log "up: http://127.0.0.1:$PORT (pid $(cat "$D/s3rver.pid"), buckets: $BUCKETS, credentials S3RVER/S3RVER)"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) [[ ${2:-} == --quiet ]] && QUIET=1; stop ;;
  status) status ;;
  *) echo "usage: s3.sh install|start|stop [--quiet]|status" >&2; exit 2 ;;
esac
