#!/usr/bin/env bash
# Ctrl-C mid-run stops cleanly — the running step is killed through launch, nothing
# partial is published — and the next run resumes: finished steps are cached.
. "$(dirname "$0")/common.sh"
cat >"$T/p.toml" <<'X'
[[step]]
name = "quick"
run = "echo q > {out.o}"
outputs = ["o"]
[[step]]
name = "slow"
inputs = { x = "@quick/o" }
run = "sleep 29.75; cat {in.x} > {out.o}"
outputs = ["o"]
X
"$BERTH" run "$T/p.toml" --format json >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 100); do [[ -e $T/results/quick/o ]] && break; sleep 0.1; done
sleep 0.5
start=$(date +%s)
kill -INT $pid
rc=0; wait $pid || rc=$?
took=$(( $(date +%s) - start ))
expect_eq "interrupted: exit 130" "$rc" 130
expect_eq "interrupted: promptly" "$(( took < 5 ))" 1
OUT=$(cat "$T/out")
expect_eq "interrupted: slow cancelled" "$(json "[s['state'] for s in j['steps'] if s['name']=='slow'][0]")" cancelled
[[ -e $T/results/slow/o ]] && fail "a partial result was published" || ok "nothing partial"
# The step's processes were killed; one may take a moment to be gone on a loaded
# machine, but not seconds. (A duration no other test sleeps, so that pgrep finds
# only this step's.)
for _ in $(seq 30); do pgrep -f "sleep 29.75" >/dev/null || break; sleep 0.1; done
pgrep -f "sleep 29.75" >/dev/null && fail "the step's process survived" || ok "no process left"
sed -i 's/sleep 29.75; //' "$T/p.toml"
run run "$T/p.toml" --format json
expect_eq "resume: quick cached" "$(json "[s['state'] for s in j['steps'] if s['name']=='quick'][0]")" cached
expect_eq "resume: slow runs" "$(json "[s['state'] for s in j['steps'] if s['name']=='slow'][0]")" executed
finish
