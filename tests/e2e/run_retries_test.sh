#!/usr/bin/env bash
# retries = N and timeout = "…" per step: a step that fails twice and then succeeds
# under retries = 2 is executed on its third attempt; one that never succeeds fails
# with its last reason; a step past its timeout is ended with its whole process tree
# (a grandchild that ignores SIGTERM too), reported as timed out, and nothing of it is
# stored. Neither key enters the step key.
. "$(dirname "$0")/common.sh"
mkdir "$T/p"
cd "$T/p"
cat >pipeline.toml <<X
[[step]]
name = "flaky"
run = "n=\$(cat $T/count 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > $T/count; echo attempt \$n; [ \$n -ge 3 ] || exit 1; echo done > {out.o}"
outputs = ["o"]
retries = 2
[[step]]
name = "after"
inputs = { i = "@flaky/o" }
run = "cat {in.i} > {out.o}"
outputs = ["o"]
X

run run pipeline.toml --format json
expect_eq "fails twice, then succeeds: exit 0" "$RC" 0
expect_eq "flaky: executed" "$(json "j['steps'][0]['state']")" executed
expect_eq "flaky: on its third attempt" "$(json "j['steps'][0]['attempts']")" 3
expect_eq "flaky ran three times" "$(cat "$T/count")" 3
expect_eq "its dependent ran after it" "$(json "j['steps'][1]['state']")" executed
run log flaky
expect_eq "its log is its last attempt's" "$OUT" "attempt 3"

# The same step with another number of retries and a time limit: the same key.
sed -i 's/^retries = 2$/retries = 5\ntimeout = "1h"/' pipeline.toml
run run pipeline.toml --format json
expect_eq "retries and timeout do not enter the key: cached" "$(json "j['cached']")" 2

# Out of retries: failed, with its last reason.
cat >always.toml <<'X'
[[step]]
name = "never"
run = "echo nope; exit 4"
outputs = ["o"]
retries = 1
X
run run always.toml --format json
expect_eq "out of retries: exit 1" "$RC" 1
expect_eq "out of retries: failed" "$(json "j['steps'][0]['state']")" failed
expect_contains "out of retries: the last reason, and the attempts" \
  "$(json "j['steps'][0]['reason']")" "exited with status 4 (attempt 2 of 2)"

# A time limit: the step and its grandchild (which ignores SIGTERM) are ended.
cat >slow.toml <<X
[[step]]
name = "hang"
run = "(trap '' TERM; exec sleep 301) & echo \$! > $T/grandchild; echo started > {out.o}; sleep 300"
outputs = ["o"]
timeout = "1s"
X
run run slow.toml --format json
expect_eq "timed out: exit 1" "$RC" 1
expect_eq "timed out: failed" "$(json "j['steps'][0]['state']")" failed
expect_eq "timed out: reported so" "$(json "j['steps'][0]['timed_out']")" True
expect_contains "timed out: the reason says so" "$(json "j['steps'][0]['reason']")" \
  "timed out after 1s: its processes were ended (SIGTERM, then SIGKILL)"
if gone "$(cat "$T/grandchild")"; then ok "the grandchild is gone"; else
  fail "the grandchild $(cat "$T/grandchild") outlived the step"; kill -9 "$(cat "$T/grandchild")"; fi
key=$(json "j['steps'][0]['key']")
run store cat --store "file://$T/p/.berth/store" "rows/v1/steps/$key"
expect_eq "timed out: no row" "$RC" 2
obj=$(printf 'started\n' | sha256sum | cut -c1-64)
[[ ! -e .berth/store/objects/${obj:0:2}/${obj:2} ]] && ok "timed out: its output is not stored" ||
  fail "timed out: its output was stored"
[[ ! -e results/hang ]] && ok "timed out: no result" || fail "timed out: results/hang exists"
finish
