#!/usr/bin/env bash
# swift.sh start|stop|status - OpenStack Swift (Debian 12's 2.30) all in one on this
# machine, with its S3 API on 127.0.0.1:$SWIFT_PORT (default 8080): path-style, real
# SigV4 checking, access key "test:tester", secret "testing".
#
#   start   stops a previous instance, writes configuration and rings, starts the
#           object, container, account and proxy servers with empty storage, waits
#           (bounded) until they answer, and creates the buckets $SWIFT_BUCKETS
#           (default "berth-test") with a signed request
#   stop    stops the four servers by their pid files
#   status  exit 0 when the proxy answers
#
# Everything (configuration, rings, objects, logs, pid files) is under $SWIFT_DIR
# (default $BERTH_SERVICES_DIR/swift, i.e. /tmp/berth-services/swift): each server is
# given swift_dir=$SWIFT_DIR/etc, so /etc/swift is never read. The storage servers
# listen on 127.0.0.1:6200-6202. SWIFT_START_TIMEOUT: seconds start waits (default 60).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SVC=swift
# shellcheck source-path=SCRIPTDIR
. "$HERE/lib.sh"

D=${SWIFT_DIR:-$SERVICES_BASE/swift}
PORT=${SWIFT_PORT:-8080}
TIMEOUT=${SWIFT_START_TIMEOUT:-60}
BUCKETS=${SWIFT_BUCKETS:-berth-test}
SERVERS=(proxy object container account)

stop() {
  local n
  for n in "${SERVERS[@]}"; do
    stop_pidfile "$D/run/$n.pid" "swift-$n-server" 5
  done
  say "stopped"
}

status() {
  if pid_from "$D/run/proxy.pid" swift-proxy-server >/dev/null &&
     [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/info") == 200 ]]; then
    echo "swift: up (S3 API on http://127.0.0.1:$PORT, key test:tester, secret testing)"
  else
    echo "swift: down"; return 1
  fi
}

start() {
  need swift-proxy-server swift-object-server swift-container-server swift-account-server \
    swift-ring-builder curl python3
  stop_on_failure
  QUIET=1 stop
  if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
    die "port $PORT is already served by a process not started from $D"
  fi
  rm -rf "${D:?}/srv" "${D:?}/etc"
  mkdir -p "$D"/{etc,srv/d1,log,run}
  local e=$D/etc t n p
  cat >"$e/swift.conf" <<'EOF'
[swift-hash]
swift_hash_path_suffix = berthtest
swift_hash_path_prefix = berthtest
[storage-policy:0]
name = gold
default = yes
EOF
  # One device, one replica: each ring has a single entry on this machine.
  for t in object:6200 container:6201 account:6202; do
    n=${t%%:*} p=${t##*:}
    cat >"$e/$n-server.conf" <<EOF
[DEFAULT]
devices = $D/srv
mount_check = false
bind_ip = 127.0.0.1
bind_port = $p
workers = 0
swift_dir = $e
user = $(id -un)
[pipeline:main]
pipeline = $n-server
[app:$n-server]
use = egg:swift#$n
EOF
    swift-ring-builder "$e/$n.builder" create 4 1 1 >/dev/null
    swift-ring-builder "$e/$n.builder" add "r1z1-127.0.0.1:$p/d1" 1 >/dev/null
    swift-ring-builder "$e/$n.builder" rebalance >/dev/null || true
  done
  # s3api before tempauth, which holds the one account; no memcached runs, and the S3
  # API does not need it (it checks each request's signature, there are no tokens).
  cat >"$e/proxy-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $PORT
workers = 0
swift_dir = $e
user = $(id -un)
[pipeline:main]
pipeline = catch_errors gatekeeper proxy-logging cache s3api tempauth proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:s3api]
use = egg:swift#s3api
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:11211
[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:proxy-logging]
use = egg:swift#proxy_logging
EOF
  # setsid: each server in its own session, so it outlives the shell that started it.
  for n in "${SERVERS[@]}"; do
    setsid "swift-$n-server" "$e/$n-server.conf" -v >"$D/log/$n.log" 2>&1 </dev/null &
    echo $! >"$D/run/$n.pid"
  done
  local deadline
  deadline=$(($(date +%s) + TIMEOUT))
  until ready; do
    before "$deadline" || { tail "$D"/log/*.log >&2 || true; die "the servers did not answer within ${TIMEOUT}s"; }
    sleep 0.3
  done
  local b code
  for b in $BUCKETS; do
    # 200 made; 409 when it is there already.
    code=$(python3 "$HERE/s3req.py" PUT "http://127.0.0.1:$PORT/$b" | cut -d' ' -f1)
    [[ $code == 200 || $code == 409 ]] || die "creating bucket $b: HTTP $code"
  done
  log "up: S3 API on http://127.0.0.1:$PORT (key test:tester, secret testing; buckets: $BUCKETS)"
}

# ready: the proxy answers and the three storage servers accept connections.
ready() {
  local p
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/info") == 200 ]] || return 1
  for p in 6200 6201 6202; do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || return 1; done
}

case "${1:-}" in
  start) start ;;
  stop) [[ ${2:-} == --quiet ]] && QUIET=1; stop ;;
  status) status ;;
  *) echo "usage: swift.sh start|stop [--quiet]|status" >&2; exit 2 ;;
esac
