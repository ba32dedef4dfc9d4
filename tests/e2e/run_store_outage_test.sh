#!/usr/bin/env bash
# A file:// store that cannot be written for a few seconds in the middle of a
# two-worker run is waited out (spec 05 §9): no step fails, every result is right, each
# step runs once, and the report says it waited. A store that stays unwritable past
# --store-patience fails the steps that could not publish, naming the store and the
# error, and loses nothing: the next run publishes them.
. "$(dirname "$0")/common.sh"
ST=$T/store
mkdir -p "$ST"

# The store made unwritable: root ignores permission bits, so a root test remounts the
# directory read-only instead (EROFS), where anyone else takes its write bit (EACCES).
lock_store() {
  if [[ $(id -u) == 0 ]]; then
    mount --bind "$ST" "$ST" && mount -o remount,ro,bind "$ST"
  else
    chmod -R a-w "$ST"
  fi
}
unlock_store() {
  if [[ $(id -u) == 0 ]]; then
    umount "$ST"
  else
    chmod -R u+w "$ST"
  fi
}
trap 'unlock_store 2>/dev/null || true; rm -rf "$T"' EXIT

cat >"$T/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = [$(seq -s, -f '"%g"' 1 20)] }
run = "echo {i} >> $T/ran.log; sleep 0.3; echo {i} > {out.o}"
outputs = ["o"]
[[step]]
name = "sum"
inputs = { parts = [$(seq -s, -f '"@s-%g/o"' 1 20)] }
run = "cat {in.parts} > {out.o}"
outputs = ["o"]
X

# --- Waited out: locked for four seconds once both workers have published something.
pids=()
for w in 1 2; do
  timeout -k 5 120 "$BERTH" run "$T/p.toml" --worker="w$w" --store "file://$ST" \
    --cache "$T/w$w/cache" --results "$T/w$w/results" --host localhost:1 \
    --format json >"$T/w$w.json" 2>"$T/w$w.err" &
  pids+=($!)
done
for _ in $(seq 200); do
  [[ $(wc -l 2>/dev/null <"$T/ran.log" || echo 0) -ge 4 ]] && break
  sleep 0.05
done
lock_store || { echo "FAIL: cannot make the store unwritable" >&2; exit 1; }
sleep 4
unlock_store
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
expect_eq "waited: both workers exit 0" "$rc" 0
[[ $rc == 0 ]] || tail -5 "$T/w1.err" "$T/w2.err" >&2
expect_eq "waited: every step ran once" "$(sort "$T/ran.log" | uniq -d | wc -l) $(sort -u "$T/ran.log" | wc -l)" "0 20"
for w in 1 2; do
  expect_eq "waited: w$w's sum is right" "$(tr -d '\n' <"$T/w$w/results/sum/o")" "$(seq -s '' 1 20)"
done
outages=$(python3 -c 'import json,sys; print(sum(json.load(open(p))["store_waits"]["outages"] for p in sys.argv[1:]))' \
  "$T/w1.json" "$T/w2.json")
expect_eq "waited: the reports count the outage" "$(( outages >= 1 ))" 1
expect_contains "waited: stderr says what was waited for" "$(cat "$T/w1.err" "$T/w2.err")" \
  "is not answering"
run store verify --store "file://$ST"
expect_eq "waited: store verify is clean" "$RC" 0

# --- Past the patience: the step fails naming the store; nothing is lost.
sed -i 's/sleep 0.3; echo {i}/sleep 0.3; echo {i}x/' "$T/p.toml"
lock_store
run run "$T/p.toml" --store "file://$ST" --results "$T/r2" --store-patience 2s --fail-fast --host localhost:1 --format json
unlock_store
expect_eq "gave up: the run fails" "$RC" 1
expect_contains "gave up: the message names the store and the patience" "$OUT" \
  "did not answer for"
expect_contains "gave up: and the store" "$OUT" "file://$ST"
expect_eq "gave up: the report counts it" "$(json "j['store_waits']['gave_up'] > 0")" True
run run "$T/p.toml" --store "file://$ST" --results "$T/r2" --host localhost:1 --format json
expect_eq "gave up: the next run succeeds" "$RC" 0
expect_eq "gave up: and is right" "$(tr -d '\n' <"$T/r2/sum/o")" "$(seq -s 'x' 1 20)x"
finish
