#!/usr/bin/env bash
# berth run --worker: separate berth processes dividing one pipeline over a file://
# store with no coordinator (spec 06). Every fixture makes the workers meet on the
# same step keys: a step's command names only paths every worker shares (the test's
# directory), never a per-worker path, so that a worker's key is everyone's key.
. "$(dirname "$0")/common.sh"

ST="file://$T/store"
# start_worker NAME ARGS...: a worker in the background, its report in $T/NAME.json.
start_worker() {
  local name=$1; shift
  timeout -k 5 120 "$BERTH" run "$@" --worker="$name" --store "$ST" --host "localhost:${SLOTS:-1}" \
    --format json >"$T/$name.json" 2>"$T/$name.err" &
  eval "pid_$name=$!"
}
# wait_worker NAME: waits for it; $WRC is its exit status.
wait_worker() {
  local pid
  eval "pid=\$pid_$1"
  WRC=0; wait "$pid" || WRC=$?
}
# field NAME EXPR: a Python expression over worker NAME's JSON report (bound to j).
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$T/$1.json"; }

# --- Two workers divide twelve steps: every step runs exactly once.
{
  echo '[pipeline]'
  echo 'name = "divide"'
  echo '[[step]]'
  echo 'name = "s-{i}"'
  echo "foreach = { i = [$(seq -s, -f '"%g"' 1 12)] }"
  echo "run = \"echo {i} >> $T/divide.log; sleep 0.3; echo {i} > {out.o}\""
  echo 'outputs = ["o"]'
  echo '[[step]]'
  echo 'name = "sum"'
  echo "inputs = { parts = [$(seq -s, -f '"@s-%g/o"' 1 12)] }"
  echo 'cmd = ["cp", "{in.parts}", "{out.o}"]'
  echo 'outputs = ["o"]'
} >"$T/divide.toml"
sed -i 's|cmd = \["cp", "{in.parts}", "{out.o}"\]|run = "cat {in.parts} > {out.o}"|' "$T/divide.toml"
start_worker a "$T/divide.toml"
start_worker b "$T/divide.toml"
wait_worker a; rc_a=$WRC
wait_worker b; rc_b=$WRC
expect_eq "two workers: a exit 0" "$rc_a" 0
expect_eq "two workers: b exit 0" "$rc_b" 0
expect_eq "two workers: every step ran once" "$(sort -n "$T/divide.log" | uniq -d | wc -l)" 0
expect_eq "two workers: all twelve ran" "$(sort -un "$T/divide.log" | wc -l)" 12
ea=$(field a "j['executed']"); eb=$(field b "j['executed']")
expect_eq "two workers: executions add up to the graph" "$((ea + eb))" 13
expect_eq "two workers: both did work" "$(( ea > 0 && eb > 0 ))" 1
expect_eq "two workers: report names the worker" "$(field a "j['worker']")" a
run store verify --store "$ST"
expect_eq "two workers: every output verifies" "$RC" 0
expect_contains "two workers: thirteen objects" "$OUT" "13 object(s) verified, 0 bad"
expect_eq "two workers: per-worker cache directories" \
  "$(ls "$T/.berth/cache/workers" | tr '\n' ' ')" "a b "

# A rerun after everything is cached executes nothing, as a worker or an ordinary run.
start_worker c "$T/divide.toml"
wait_worker c
expect_eq "rerun worker: exit 0" "$WRC" 0
expect_eq "rerun worker: nothing executed" "$(field c "j['executed']")" 0
expect_eq "rerun worker: all cached" "$(field c "j['cached']")" 13
run run "$T/divide.toml" --store "$ST" --format json
expect_eq "ordinary run after workers: nothing executed" "$(json "j['executed']")" 0
expect_eq "ordinary run after workers: the whole graph from the store" "$(json "j['cached']")" 13
expect_eq "ordinary run: adopts who computed each step" \
  "$(json "sorted(set(s['computed_by'] for s in j['steps']))")" "['a', 'b']"
run methods "$T/divide.toml" --store "$ST"
expect_contains "methods: counts every output" "$OUT" "13 output(s)"
expect_contains "methods: names the engine" "$OUT" "berth "

# --- Four workers divide sixteen steps.
sed -e 's/name = "divide"/name = "four"/' -e "s|$T/divide.log|$T/four.log|" \
  -e "s/seq/seq/" "$T/divide.toml" >"$T/four.toml"
python3 - "$T/four.toml" <<'PY'
import sys, re
p = sys.argv[1]; s = open(p).read()
s = re.sub(r'foreach = \{ i = \[.*\] \}', 'foreach = { i = [%s] }' % ",".join('"%d"' % i for i in range(1, 17)), s)
s = re.sub(r'parts = \[.*\]', 'parts = [%s]' % ",".join('"@s-%d/o"' % i for i in range(1, 17)), s)
s = s.replace('echo {i} >', 'echo x{i} >', 1)  # other keys than the first pipeline's
open(p, "w").write(s)
PY
for w in w1 w2 w3 w4; do start_worker $w "$T/four.toml"; done
total=0; busy=0
for w in w1 w2 w3 w4; do
  wait_worker $w
  expect_eq "four workers: $w exit 0" "$WRC" 0
  e=$(field $w "j['executed']"); total=$((total + e)); ((e > 0)) && busy=$((busy + 1))
done
expect_eq "four workers: every step ran once" "$(sort "$T/four.log" | uniq -d | wc -l)" 0
expect_eq "four workers: all sixteen ran" "$(sort -u "$T/four.log" | wc -l)" 16
expect_eq "four workers: executions add up to the graph" "$total" 17
expect_eq "four workers: at least three shared the work" "$(( busy >= 3 ))" 1

# --- A worker killed with SIGKILL mid-step: its step is taken after the lease expires.
cat >"$T/kill.toml" <<X
[[step]]
name = "hang"
run = "echo \$\$ >> $T/kill.log; while [ ! -e $T/kill.go ]; do sleep 0.05; done; echo done > {out.o}"
outputs = ["o"]
[[step]]
name = "after"
inputs = { x = "@hang/o" }
run = "cat {in.x} > {out.o}"
outputs = ["o"]
X
start_worker k1 "$T/kill.toml" --lease 2s
for _ in $(seq 200); do [[ -s $T/kill.log ]] && break; sleep 0.05; done
expect_eq "kill: the first worker started the step" "$(wc -l <"$T/kill.log")" 1
kill -9 $(pgrep -P "$pid_k1") "$pid_k1"; wait "$pid_k1" 2>/dev/null || true
pkill -9 -f "$T/kill.go" || true  # its orphaned step
start_worker k2 "$T/kill.toml" --lease 2s
for _ in $(seq 200); do [[ $(wc -l <"$T/kill.log") -ge 2 ]] && break; sleep 0.05; done
touch "$T/kill.go"
wait_worker k2
expect_eq "kill: the second worker completes the run" "$WRC" 0
expect_eq "kill: it waited for the dead worker's claim" "$(( $(field k2 "j['leases']['held']") >= 1 ))" 1
expect_eq "kill: then took the step" "$(field k2 "[s['state'] for s in j['steps']]")" "['executed', 'executed']"
run store verify --store "$ST"
expect_eq "kill: every output present and verified" "$RC" 0

# --- A failing step is handed back: another worker takes the key and succeeds.
cat >"$T/flaky.toml" <<X
[[step]]
name = "flaky"
run = "if [ -e $T/flaky.once ]; then echo ok > {out.o}; else touch $T/flaky.once; sleep 0.5; exit 3; fi"
outputs = ["o"]
X
start_worker f1 "$T/flaky.toml"
start_worker f2 "$T/flaky.toml"
wait_worker f1; rc1=$WRC
wait_worker f2; rc2=$WRC
expect_eq "flaky: one worker failed, one succeeded" "$(echo $rc1 $rc2 | tr ' ' '\n' | sort | tr '\n' ' ')" "0 1 "
released=$(( $(field f1 "j['leases']['released']") + $(field f2 "j['leases']['released']") ))
expect_eq "flaky: the failing worker released its key" "$released" 1
key=$(field f1 "j['steps'][0]['key']")
run store cat "rows/v1/leases/$key/1" --store "$ST"
expect_contains "flaky: generation 1 is a release" "$OUT" '"released":true'
run store cat "rows/v1/leases/$key/2" --store "$ST"
expect_eq "flaky: generation 2 is the successful claim" "$RC" 0
[[ -s $T/results-flaky/flaky/o ]] && ok "flaky: the output is there" || fail "flaky: no output"

# --- Divergence: two workers compute one key at once (a worker stalled past its lease:
# it cannot extend its claims, they expire and are taken while its steps still run).
# Same meaning, other bytes (a comment line the canonicaliser drops): no divergence.
# Other meaning: the loser reports the step and both canonical hashes.
cat >"$T/div.toml" <<X
[[step]]
name = "same"
run = "echo \$\$ >> $T/same.log; while [ ! -e $T/div.go ]; do sleep 0.05; done; printf 'result\\\\n# %s\\\\n' \$\$ > {out.o}"
outputs = ["o"]
canonical = { o = 'command:["grep", "-v", "^#"]' }
[[step]]
name = "differ"
run = "echo \$\$ >> $T/differ.log; while [ ! -e $T/div.go ]; do sleep 0.05; done; echo \$\$ > {out.o}"
outputs = ["o"]
X
SLOTS=2 start_worker d1 "$T/div.toml" --lease 1s
for _ in $(seq 300); do
  [[ $(cat "$T/same.log" "$T/differ.log" 2>/dev/null | wc -l) -ge 2 ]] && break; sleep 0.05
done
berth_d1=$(pgrep -P "$pid_d1")
kill -STOP "$berth_d1"
SLOTS=2 start_worker d2 "$T/div.toml" --lease 1s
for _ in $(seq 300); do
  [[ $(cat "$T/same.log" "$T/differ.log" 2>/dev/null | wc -l) -ge 4 ]] && break; sleep 0.05
done
expect_eq "divergence: each step was started by both workers" \
  "$(cat "$T/same.log" "$T/differ.log" 2>/dev/null | wc -l)" 4
kill -CONT "$berth_d1"
touch "$T/div.go"
wait_worker d1; rc1=$WRC
wait_worker d2; rc2=$WRC
expect_eq "divergence: both workers finish" "$rc1 $rc2" "0 0"
divs=$(python3 - "$T/d1.json" "$T/d2.json" <<'PY'
import json, sys
d = [x for p in sys.argv[1:] for x in json.load(open(p))["divergences"]]
print(len(d), sorted({x["step"] for x in d}), all(x["ours"] != x["theirs"] and x["ours"] and x["theirs"] for x in d))
PY
)
expect_eq "divergence: only the step whose meaning differs, with both hashes" "$divs" "1 ['differ'] True"

# --- The cache directory: an explicit --cache is locked; a stale lock says how to clear it.
mkdir -p "$T/c"
echo "worker=old host=$(hostname -s) pid=4194000 since=2026-01-01T00:00:00Z" >"$T/c/worker.lock"
run run "$T/divide.toml" --worker=x --store "$ST" --cache "$T/c" --host localhost:1
expect_eq "cache lock: refused" "$RC" 2
expect_contains "cache lock: names the lock file" "$ERR" "$T/c/worker.lock"
expect_contains "cache lock: names the holder" "$ERR" "old"
expect_contains "cache lock: says how to clear it" "$ERR" "delete"
rm "$T/c/worker.lock"
run run "$T/divide.toml" --worker=x --store "$ST" --cache "$T/c" --host localhost:1
expect_eq "cache lock: free again after deletion" "$RC" 0
[[ -e $T/c/worker.lock ]] && fail "cache lock: left behind" || ok "cache lock: removed at the end"

# --- Refusals before anything runs.
expect_bad_input "worker without a shared store" "shared store" run "$T/divide.toml" --worker=y
expect_bad_input "worker name with a path separator" "a/b" run "$T/divide.toml" --worker=a/b --store "$ST"
expect_bad_input "bad lease duration" "--lease" run "$T/divide.toml" --worker=z --store "$ST" --lease 10x

finish
