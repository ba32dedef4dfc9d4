#!/usr/bin/env bash
# Lease extension (spec 06 §4): a worker extends the claim of a step it is still
# running, so a step three times longer than --lease runs once across two workers. (A
# holder that dies stops extending, and its step is taken after the claim expires:
# run_worker_test.sh's killed worker.)
. "$(dirname "$0")/common.sh"

ST="file://$T/store"
# start_worker NAME PIPELINE: a worker with a 2 s lease in the background.
start_worker() {
  timeout -k 5 120 "$BERTH" run "$2" --worker="$1" --store "$ST" --lease 2s \
    --host localhost:1 --format json >"$T/$1.json" 2>"$T/$1.err" &
  eval "pid_$1=$!"
}
wait_worker() {
  local pid
  eval "pid=\$pid_$1"
  WRC=0; wait "$pid" || WRC=$?
}
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$T/$1.json"; }

# --- A 6 s step, two workers, 2 s leases: it runs once.
cat >"$T/long.toml" <<X
[[step]]
name = "long"
run = "echo run >> $T/long.log; sleep 6; echo done > {out.o}"
outputs = ["o"]
X
start_worker a "$T/long.toml"
start_worker b "$T/long.toml"
wait_worker a; rc_a=$WRC
wait_worker b; rc_b=$WRC
expect_eq "worker a: exit 0" "$rc_a" 0
expect_eq "worker b: exit 0" "$rc_b" 0
expect_eq "the step three leases long ran once" "$(wc -l <"$T/long.log")" 1
ea=$(field a "j['executed']"); eb=$(field b "j['executed']")
expect_eq "one worker executed it, the other found it cached" "$ea$eb" \
  "$( ((ea == 1)) && echo 10 || echo 01)"
holder=$( ((ea == 1)) && echo a || echo b)
expect_eq "the holder extended its claim" "$(field "$holder" "j['leases']['extended'] >= 2")" True
expect_eq "the holder never lost it" "$(field "$holder" "j['leases']['lost']")" 0

finish
