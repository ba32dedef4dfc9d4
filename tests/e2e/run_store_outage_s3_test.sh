#!/usr/bin/env bash
# A store that stops answering for ten seconds in the middle of a two-worker run is
# waited out (spec 05 §9): s3rver stopped and started again with its data, Swift's S3
# proxy the same. No step fails, every result is right, the duplicates are at most what
# the servers' missing conditional writes explain, and the report says it waited.
# Each server here is an instance of the test's own (s3rver in $T, a second Swift proxy
# in front of the shared storage servers), so stopping it disturbs no other test.
. "$(dirname "$0")/common.sh"
SERVICES=${BERTH_SERVICES_DIR:-/tmp/berth-services}
[[ -x $SERVICES/s3/node_modules/.bin/s3rver ]] ||
  { echo "FAIL: s3rver is not installed under $SERVICES/s3 (scripts/install-deps.sh)" >&2; exit 1; }
[[ -f $SERVICES/swift/etc/proxy-server.conf ]] ||
  { echo "FAIL: Swift is not running from $SERVICES/swift (scripts/services.sh start)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- the servers
S3_PORT=$(free_port)
mkdir -p "$T/s3rver"
ln -s "$SERVICES/s3/node_modules" "$T/s3rver/node_modules"
s3rver() { S3_DIR=$T/s3rver S3_PORT=$S3_PORT S3_BUCKETS=outage QUIET=1 \
  bash "$BERTH_SOURCE_DIR/scripts/services/s3.sh" "$@" >/dev/null; }
s3rver_restart() { S3_KEEP_DATA=1 s3rver start; }
SWIFT_PORT=$(free_port)
sed "s/^bind_port = .*/bind_port = $SWIFT_PORT/" "$SERVICES/swift/etc/proxy-server.conf" >"$T/proxy.conf"
swift_start() {
  setsid swift-proxy-server "$T/proxy.conf" >>"$T/proxy.log" 2>&1 </dev/null &
  echo $! >"$T/proxy.pid"
  for _ in $(seq 100); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SWIFT_PORT/info") == 200 ]] && return 0
    sleep 0.2
  done
  cat "$T/proxy.log" >&2
  return 1
}
swift_stop() { kill "$(cat "$T/proxy.pid")" 2>/dev/null || true; wait "$(cat "$T/proxy.pid")" 2>/dev/null || true; }
cleanup() { s3rver stop || true; swift_stop; rm -rf "$T"; }
trap cleanup EXIT

cat >"$T/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = [$(seq -s, -f '"%g"' 1 30)] }
run = "echo {i} >> $T/\$LOG_FOR_TEST.log; sleep 0.4; echo {i} > {out.o}"
outputs = ["o"]
[[step]]
name = "sum"
inputs = { parts = [$(seq -s, -f '"@s-%g/o"' 1 30)] }
run = "cat {in.parts} > {out.o}"
outputs = ["o"]
X

# outage LABEL URL STOP START: two workers; the server is stopped once both have
# published something, and started again ten seconds later.
outage() {
  local label=$1 url=$2 stop=$3 start=$4
  export LOG_FOR_TEST=$label
  local pids=() w
  for w in 1 2; do
    mkdir -p "$T/$label-$w"
    timeout -k 5 240 "$BERTH" run "$T/p.toml" --worker="$label-$w" --store "$url" \
      --cache "$T/$label-$w/cache" --results "$T/$label-$w/results" \
      --host localhost:1 --format json >"$T/$label-$w.json" 2>"$T/$label-$w.err" &
    pids+=($!)
  done
  for _ in $(seq 200); do
    [[ $(wc -l 2>/dev/null <"$T/$label.log" || echo 0) -ge 6 ]] && break
    sleep 0.1
  done
  $stop
  local down_at=$SECONDS
  sleep 10
  $start || fail "$label: the server did not come back"
  local rc=0 p
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  expect_eq "$label: both workers exit 0 across the outage" "$rc" 0
  [[ $rc == 0 ]] || tail -5 "$T/$label-1.err" "$T/$label-2.err" >&2
  expect_eq "$label: the server was down for ten seconds" "$(( SECONDS - down_at >= 10 ))" 1
  expect_eq "$label: all thirty ran" "$(sort -u "$T/$label.log" | wc -l)" 30
  local dups
  dups=$(sort "$T/$label.log" | uniq -d | wc -l)
  echo "     $label: $dups step(s) executed twice"
  expect_eq "$label: duplicates only from the server's race (at most 3)" "$(( dups <= 3 ))" 1
  for w in 1 2; do
    expect_eq "$label-$w: no step failed" \
      "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["failed"])' "$T/$label-$w.json")" 0
    expect_eq "$label-$w: the sum is right" "$(tr -d '\n' <"$T/$label-$w/results/sum/o")" \
      "$(seq -s '' 1 30)"
  done
  local waited
  waited=$(python3 -c 'import json,sys; print(sum(json.load(open(p))["store_waits"]["outages"] for p in sys.argv[1:]))' \
    "$T/$label-1.json" "$T/$label-2.json")
  expect_eq "$label: the reports count the outage" "$(( waited >= 1 ))" 1
  expect_contains "$label: stderr says the store was waited for" \
    "$(cat "$T/$label-1.err" "$T/$label-2.err")" "is not answering"
  expect_contains "$label: and when it answered again" \
    "$(cat "$T/$label-1.err" "$T/$label-2.err")" "answered again after"
  expect_contains "$label: the report's notice names the wait" \
    "$(cat "$T/$label-1.json" "$T/$label-2.json")" "the run waited it out"
}

s3rver start || { echo "FAIL: s3rver did not start" >&2; exit 1; }
export AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
outage s3rver "s3://outage/run" "s3rver stop" s3rver_restart

swift_start || { echo "FAIL: a Swift proxy did not start" >&2; exit 1; }
export AWS_ENDPOINT_URL=http://127.0.0.1:$SWIFT_PORT AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing
outage swift "s3://berth-test/outage-$$-$(date +%s)" swift_stop swift_start
finish
