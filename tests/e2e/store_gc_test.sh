#!/usr/bin/env bash
# berth store gc (spec 05 §10): keeps what the last runs reach and everything younger
# than the grace period, deletes the rest — here while two workers run, one hitting
# old rows nothing kept reaches, one storing objects again that only old garbage
# held. Afterwards the store verifies clean and every kept run reruns all cached.
. "$(dirname "$0")/common.sh"
ST="file://$T/store"

# pipeline NAME COMMAND: 24 steps and a sum, the command's {i} text the output.
pipeline() {
  cat >"$T/$1.toml" <<X
[pipeline]
name = "$1"
[[step]]
name = "s-{i}"
foreach = { i = [$(seq -s, 1 24)] }
run = "$2"
outputs = ["o"]
[[step]]
name = "sum"
inputs = { parts = [$(seq -s, -f '"@s-%g/o"' 1 24)] }
run = "cat {in.parts} > {out.o}"
outputs = ["o"]
X
}
pipeline v1 "sleep 0.1; echo out-{i} > {out.o}"
pipeline v2 "echo other-{i} > {out.o}"
pipeline v3 "sleep 0.1; echo out-{i} > {out.o}  # the same bytes as v1's, under other keys"

# Two runs, v1 then v2, then everything made three days old.
for p in v1 v2; do
  run run "$T/$p.toml" --store "$ST" --host localhost:2 --format json
  expect_eq "$p: executed" "$(json "j['executed']")" 25
done
find "$T/store" -type f -exec touch -d '3 days ago' {} +

# A dry run says what would go, and how many bytes, and deletes nothing.
run store gc --store "$ST" --keep-runs 1 --grace 1d --dry-run
expect_eq "dry run: exit 0" "$RC" 0
expect_contains "dry run: v1's report would go" "$OUT" "run       rows/v1/runs/"
expect_contains "dry run: the totals" "$OUT" "kept 1 of 2 run(s) and what they reach; would delete 1 run(s), 25 step row(s)"
before=$(find "$T/store" -type f | wc -l)
run store gc --store "$ST" --keep-runs 1 --grace 1d --dry-run
expect_eq "dry run: nothing deleted" "$(find "$T/store" -type f | wc -l)" "$before"

# Workers on v1 (every step cached, on rows nothing kept reaches) and v3 (storing v1's
# objects again), while collectors keep running.
start_worker() {
  timeout -k 5 180 "$BERTH" run "$T/$1.toml" --worker="$2" --store "$ST" --host localhost:2 \
    --format json >"$T/$2.json" 2>"$T/$2.err" &
  eval "pid_$2=$!"
}
start_worker v1 a
start_worker v3 b
gcs=0 deleted=0
while kill -0 "$pid_a" 2>/dev/null || kill -0 "$pid_b" 2>/dev/null; do
  if "$BERTH" store gc --store "$ST" --keep-runs 1 --grace 1d >"$T/gc.out" 2>"$T/gc.err"; then
    gcs=$((gcs + 1))
    n=$(sed -n 's/.* \([0-9][0-9]*\) object(s),.*/\1/p' "$T/gc.out")
    deleted=$((deleted + ${n:-0}))
  else
    fail "gc failed while workers ran: $(cat "$T/gc.err")"
    break
  fi
done
wait "$pid_a"; rc_a=$?
wait "$pid_b"; rc_b=$?
expect_eq "worker on v1: exit 0" "$rc_a" 0
expect_eq "worker on v3: exit 0" "$rc_b" 0
expect_eq "collectors ran while the workers did" "$((gcs > 0))" 1
expect_eq "and deleted v1's old report's steps meanwhile" "$((deleted >= 1))" 1
# Which of v1's old rows each worker found before a collector took them is a race:
# either way every step ends cached or executed, none failed.
for w in a b; do
  expect_eq "worker $w: every step cached or executed" \
    "$(python3 -c "import json; j = json.load(open('$T/$w.json')); print(j['cached'] + j['executed'], j['failed'])")" "25 0"
done

# Once more with the workers done: v2's run is no longer among the last, and goes with
# everything only it reached (its 24 outputs and its sum's; v1 and v3 share theirs).
run store gc --store "$ST" --keep-runs 1 --grace 1d
expect_eq "after: exit 0" "$RC" 0
v2_rows=0
for row in "$T"/store/rows/v1/runs/*; do
  [[ $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pipeline'])" "$row") == v2 ]] &&
    v2_rows=$((v2_rows + 1))
done
expect_eq "v2's run is gone" "$v2_rows" 0
[[ -z $(grep -rl other- "$T/store/objects") ]] && ok "v2's outputs are gone" ||
  fail "v2's outputs are still stored"

run store verify --store "$ST"
expect_eq "store verify: clean after the collections" "$RC" 0
expect_contains "store verify: nothing bad" "$OUT" ", 0 bad"
[[ -z $(find "$T/store/.gc" -type f 2>/dev/null) ]] && ok "no collector left anything held" ||
  fail "held entries left behind"

# Every kept run reruns all cached.
for row in "$T"/store/rows/v1/runs/*; do
  name=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pipeline'])" "$row")
  run run "$T/$name.toml" --store "$ST" --host localhost:2 --format json
  expect_eq "kept run of $name: all cached" "$(json "(j['executed'], j['cached'])")" "(0, 25)"
done
finish
