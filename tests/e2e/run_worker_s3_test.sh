#!/usr/bin/env bash
# Two workers divide one pipeline over an s3:// store, on each of the two real
# S3-protocol servers scripts/services.sh starts: OpenStack Swift's S3 API (checks
# SigV4, refuses conditional PUTs with 501) and s3rver (silently ignores
# If-None-Match). Neither enforces write-once, so the store must say so at start-up,
# and the leases' read-backs still divide the work.
. "$(dirname "$0")/common.sh"
SWIFT=${BERTH_TEST_S3_SWIFT:-}
S3RVER=${BERTH_TEST_S3RVER:-}
if [[ -z $SWIFT || -z $S3RVER ]]; then
  echo "FAIL: BERTH_TEST_S3_SWIFT / BERTH_TEST_S3RVER are not set; start the servers with scripts/services.sh start (scripts/test.sh does)" >&2
  exit 1
fi
# scripts/services/swift.sh made the bucket berth-test.

# Each step logs itself, then waits (20 s at most) until the log holds two lines: with
# one slot per worker, the first step cannot end before the other worker has started
# one, so both do work however long the second takes to open the store under load.
cat >"$T/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6", "7", "8"] }
run = "L=$T/\$LOGNAME_FOR_TEST.log; echo {i} >> \$L; n=0; while [ \$(wc -l <\$L) -lt 2 ] && [ \$n -lt 200 ]; do sleep 0.1; n=\$((n + 1)); done; sleep 0.3; echo {i} > {out.o}"
outputs = ["o"]
[[step]]
name = "sum"
inputs = { parts = ["@s-1/o", "@s-2/o", "@s-3/o", "@s-4/o", "@s-5/o", "@s-6/o", "@s-7/o", "@s-8/o"] }
run = "cat {in.parts} > {out.o}"
outputs = ["o"]
X

# divide LABEL ENDPOINT BUCKET KEY SECRET NOTICE
divide() {
  local label=$1 endpoint=$2 bucket=$3 key=$4 secret=$5 notice=$6
  local url="s3://$bucket/berth-e2e/$(date +%s%N)-$$"
  export AWS_ENDPOINT_URL=$endpoint AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret
  export LOGNAME_FOR_TEST=$label
  local pids=()
  for w in 1 2; do
    timeout -k 5 120 "$BERTH" run "$T/p.toml" --worker="$label-$w" --store "$url" \
      --host localhost:1 --format json >"$T/$label-$w.json" 2>"$T/$label-$w.err" &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  expect_eq "$label: both workers exit 0" "$rc" 0
  [[ $rc == 0 ]] || cat "$T/$label-1.err" "$T/$label-2.err" >&2
  # Neither server enforces write-once, so two claims that probe and write inside one
  # read-back's window can both believe they won: the notice says that costs
  # duplicated work. Allow one such duplicate; more means the leases are not working.
  local dups
  dups=$(sort "$T/$label.log" | uniq -d | wc -l)
  expect_eq "$label: steps ran once (at most one duplicate from the servers' race)" "$(( dups <= 1 ))" 1
  expect_eq "$label: all eight ran" "$(sort -u "$T/$label.log" | wc -l)" 8
  local sum
  sum=$(python3 -c 'import json,sys; print(sum(json.load(open(p))["executed"] for p in sys.argv[1:]))' \
    "$T/$label-1.json" "$T/$label-2.json")
  expect_eq "$label: executions add up to the graph" "$(( sum >= 9 && sum <= 10 ))" 1
  expect_eq "$label: both workers did work" \
    "$(python3 -c 'import json,sys; print(all(json.load(open(p))["executed"] > 0 for p in sys.argv[1:]))' \
      "$T/$label-1.json" "$T/$label-2.json")" True
  expect_contains "$label: the server's behaviour is reported at start-up" \
    "$(cat "$T/$label-1.err")" "$notice"
  OUT=$(cat "$T/$label-1.json")
  expect_contains "$label: and on the report" "$(json "j['notices']")" "$notice"
  run run "$T/p.toml" --store "$url" --format json
  expect_eq "$label: an ordinary run afterwards executes nothing" "$(json "j['executed']")" 0
  expect_eq "$label: the whole graph comes from the bucket" "$(json "j['cached']")" 9
  expect_eq "$label: the result is whole" "$(cat "$T/results-p/sum/o" | tr '\n' ' ')" "1 2 3 4 5 6 7 8 "
  run store verify --store "$url"
  expect_eq "$label: every object verifies" "$RC" 0
}

divide swift "$SWIFT" berth-test test:tester testing "refuses"
divide s3rver "$S3RVER" testbucket S3RVER S3RVER "ignores"
finish
