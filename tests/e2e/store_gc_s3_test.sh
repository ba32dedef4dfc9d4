#!/usr/bin/env bash
# berth store gc on an s3:// store, on each of the two real S3-protocol servers
# scripts/services.sh starts (Swift's S3 API and s3rver): what the last run reaches is
# kept and reruns all cached, an older run's outputs go, the store verifies clean.
. "$(dirname "$0")/common.sh"
SWIFT=${BERTH_TEST_S3_SWIFT:-}
S3RVER=${BERTH_TEST_S3RVER:-}
if [[ -z $SWIFT || -z $S3RVER ]]; then
  echo "FAIL: BERTH_TEST_S3_SWIFT / BERTH_TEST_S3RVER are not set; start the servers with scripts/services.sh start (scripts/test.sh does)" >&2
  exit 1
fi

for v in 1 2; do
  cat >"$T/v$v.toml" <<X
[pipeline]
name = "v$v"
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3"] }
run = "echo v$v-{i} > {out.o}"
outputs = ["o"]
X
done

# collect LABEL ENDPOINT BUCKET KEY SECRET
collect() {
  local label=$1 url="s3://$3/berth-e2e/gc-$(date +%s%N)-$$"
  export AWS_ENDPOINT_URL=$2 AWS_ACCESS_KEY_ID=$4 AWS_SECRET_ACCESS_KEY=$5
  for v in 1 2; do
    run run "$T/v$v.toml" --store "$url" --host localhost:1 --format json
    expect_eq "$label: v$v executed" "$(json "j['executed']")" 3
  done
  # An S3 listing gives times in whole seconds, and Swift rounds them up: a run written
  # within the last second looks younger than a grace of 0 and is kept.
  sleep 1.2
  run store gc --store "$url" --keep-runs 1 --grace 0 --dry-run
  expect_contains "$label: dry run says what would go" "$OUT" \
    "kept 1 of 2 run(s) and what they reach; would delete 1 run(s), 3 step row(s)"
  run store gc --store "$url" --keep-runs 1 --grace 0
  expect_eq "$label: gc exit 0" "$RC" 0
  expect_contains "$label: a grace of 0 is warned about" "$ERR" "is safe only while no run"
  expect_contains "$label: v1's run and its rows went" "$OUT" "deleted 1 run(s), 3 step row(s)"
  run store verify --store "$url"
  expect_eq "$label: verify clean" "$RC" 0
  run run "$T/v2.toml" --store "$url" --host localhost:1 --format json
  expect_eq "$label: the kept run reruns all cached" "$(json "j['cached']")" 3
  run run "$T/v1.toml" --store "$url" --host localhost:1 --format json
  expect_eq "$label: the collected run runs again" "$(json "j['executed']")" 3
}
collect swift "$SWIFT" berth-test test:tester testing
collect s3rver "$S3RVER" testbucket S3RVER S3RVER
finish
