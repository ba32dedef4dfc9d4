#!/usr/bin/env bash
# A run as it happens (spec 04 §7.6): `berth log -f` from another process follows a
# running step's output — what it printed before the follower came and after — and ends
# with the step, with its exit status; `berth status` names the running steps and their
# cores, then says nothing runs; a second run says which run it waits for; a board whose
# run was killed is called stale.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p" "$T/flags"
cd "$T/p"
cat >pipeline.toml <<X
[[step]]
name = "talk"
run = "echo before-attach; while [ ! -e $T/flags/talk ]; do sleep 0.05; done; echo after-attach > {out.o}; echo after-attach"
outputs = ["o"]
[[step]]
name = "quiet"
cores = 0
run = "while [ ! -e $T/flags/quiet ]; do sleep 0.05; done; exit 5"
outputs = ["o"]
[[step]]
name = "sad"
run = "echo sad-start; while [ ! -e $T/flags/sad ]; do sleep 0.05; done; echo sad-end; exit 3"
outputs = ["o"]
X

# wait_for WHAT COMMAND...: retries COMMAND for up to 20 s.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 200); do "$@" && return 0; sleep 0.1; done
  fail "timed out waiting for $what"
  return 1
}
step_running() { "$BERTH" status --format json 2>/dev/null | grep -q "\"step\": \"$1\""; }

"$BERTH" run pipeline.toml --no-step-output >"$T/run1.out" 2>"$T/run1.err" &
run1=$!
wait_for "talk on the board" step_running talk
wait_for "sad on the board" step_running sad

# berth status: the running steps, their nodes and cores, and the run.
run status --format json
expect_eq "status json: exit 0" "$RC" 0
expect_eq "status json: running" "$(json "j['state']")" running
expect_eq "status json: the run's pid" "$(json "j['run']['pid']")" "$run1"
expect_eq "status json: the three steps run" "$(json "sorted(s['step'] for s in j['running'])")" \
  "['quiet', 'sad', 'talk']"
expect_eq "status json: a step has its one core" \
  "$(json "[len(s['cores']) for s in j['running'] if s['step']=='talk'][0]")" 1
cores=$(json "[s['cores'][0] for s in j['running'] if s['step']=='talk'][0]")
run status
expect_contains "status text: the run" "$OUT" "a run is on (pid $run1 on "
expect_contains "status text: the step, its core" "$OUT" "talk  on "
expect_contains "status text: the step's core" "$OUT" ", cores $cores, for "

# A second run of the pipeline says which run it waits for.
"$BERTH" run pipeline.toml --no-step-output >"$T/run2.out" 2>"$T/run2.err" &
run2=$!
wait_for "the second run's word" grep -q "waiting for another run" "$T/run2.err"
expect_contains "second run: names the run it waits for" "$(cat "$T/run2.err")" \
  "holds the cache index this run needs: $T/p/pipeline.toml (pid $run1 on "

# berth log -f from another process: what was printed before it came, then the rest,
# and it ends when the step does, with its status.
"$BERTH" log -f pipeline.toml talk >"$T/follow.out" 2>"$T/follow.err" &
follow=$!
wait_for "the output printed before the follower came" grep -q before-attach "$T/follow.out"
kill -0 $follow 2>/dev/null && ok "log -f waits while the step runs" || fail "log -f ended early"
touch "$T/flags/talk"
rc=0; wait $follow || rc=$?
expect_eq "log -f: ends with the step, exit 0" "$rc" 0
expect_eq "log -f: before and after" "$(cat "$T/follow.out")" "before-attach
after-attach"

"$BERTH" log -f pipeline.toml sad >"$T/sad.out" 2>"$T/sad.err" &
follow=$!
wait_for "sad's first line" grep -q sad-start "$T/sad.out"
touch "$T/flags/sad"
rc=0; wait $follow || rc=$?
expect_eq "log -f: a step's exit status is its own" "$rc" 3
expect_contains "log -f: the failed step's last words" "$(cat "$T/sad.out")" "sad-end"

# A step that prints nothing has no output file until it prints: log -f waits all the
# same and ends with its status.
"$BERTH" log -f pipeline.toml quiet >"$T/quiet.out" 2>"$T/quiet.err" &
follow=$!
sleep 0.5
kill -0 $follow 2>/dev/null && ok "log -f waits on a step that printed nothing" ||
  fail "log -f on a quiet step ended early: $(cat "$T/quiet.err")"
touch "$T/flags/quiet"
rc=0; wait $follow || rc=$?
expect_eq "log -f on a quiet step: ends with its status, prints nothing" "$rc:$(cat "$T/quiet.out")" "5:"

wait $run1 || true
wait $run2 || true
run status
expect_contains "after the run: nothing runs" "$OUT" "nothing is running; the last run (pid "
run status --format json
expect_eq "after the run: state ended" "$(json "j['state']")" ended
# The second run, once it ran, kept the board: its own, not the first's end written
# over it.
expect_eq "after both runs: the board is the second run's" "$(json "j['run']['pid']")" "$run2"
expect_eq "after the run: no step listed" "$(json "len(j['running'])")" 0
left=$(find .berth/pipelines/pipeline.toml/live -name '*.log' | wc -l)
expect_eq "after the run: the live copies of its output are gone" "$left" 0
# Not running: -f prints the stored log, as berth log does.
run log -f pipeline.toml talk
expect_eq "log -f on an ended step: its stored log" "$OUT" "before-attach
after-attach"

# A run killed outright leaves a board nobody ends: stale, and not trusted.
rm -f "$T/flags/sad"
sed -i 's/exit 3/exit 4/' pipeline.toml
"$BERTH" run pipeline.toml --no-step-output >/dev/null 2>&1 &
run3=$!
wait_for "sad on the third run's board" step_running sad
kill -9 $run3
wait $run3 2>/dev/null || true
run status --format json
expect_eq "killed run: the board is stale" "$(json "j['state']")" stale
expect_eq "killed run: its steps are not listed" "$(json "len(j['running'])")" 0
run status
expect_contains "killed run: said" "$OUT" "is stale: the run that kept it"
expect_contains "killed run: why" "$OUT" "its process $run3 on "
rc=0; timeout 20 "$BERTH" log -f pipeline.toml sad >"$T/stale.out" 2>&1 || rc=$?
expect_eq "log -f on a stale board: the stored log, not a wait" "$rc" 0
expect_contains "log -f on a stale board: the last run's log" "$(cat "$T/stale.out")" sad-end
touch "$T/flags/sad"

# A pipeline file that is not there is an error naming it, not "nothing is running".
run status nope.toml
expect_eq "status of a missing pipeline: fails" "$RC" 2
expect_contains "status of a missing pipeline: names it" "$ERR" "nope.toml: no such pipeline file"
finish
