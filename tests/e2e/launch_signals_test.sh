#!/usr/bin/env bash
# Termination: escalation SIGCONT -> SIGTERM -> SIGKILL against a rank that traps
# SIGTERM and has a grandchild (both gone); SIGINT to berth leaves nothing behind;
# --timeout ends the job.
. "$(dirname "$0")/common.sh"
H=$BERTH_BUILD_DIR/helpers
[[ -x $H/berth_helper_spawn_grandchild ]] || { echo "FAIL: helpers not built in $H" >&2; exit 1; }

# A rank trapping SIGTERM, with a grandchild also trapping it, killed by the abort
# that a failing second rank causes.
# The rank prints its own pid, then the helper prints its grandchild's.
G=(sh -c 'echo $$; exec "$0"' "$H/berth_helper_spawn_grandchild")
"$BERTH" launch --bind-to none --grace 200 -n 1 "${G[@]}" : -n 1 sh -c 'sleep 0.5; exit 4' \
  >"$T/out" 2>"$T/err" &
pid=$!
rc=0; wait $pid || rc=$?
expect_eq "abort: exit code of the failure" "$rc" 4
kids=$(grep -oE '[0-9]+' "$T/out" | head -2 | tr '\n' ' ')
for k in $kids; do
  if gone "$k"; then ok "process $k is gone"; else fail "process $k survived"; kill -9 "$k"; fi
done
[[ -n $kids ]] && ok "helper reported its pids" || fail "no pids reported: $(cat "$T/out" "$T/err")"

# SIGINT to berth: ranks and their children are ended, berth exits 130.
"$BERTH" launch --bind-to none --grace 200 -n 2 "${G[@]}" >"$T/out2" 2>"$T/err2" &
pid=$!
for _ in $(seq 50); do [[ $(grep -c . "$T/out2" 2>/dev/null) -ge 4 ]] && break; sleep 0.1; done
kill -INT $pid
rc=0; wait $pid || rc=$?
expect_eq "SIGINT: 130" "$rc" 130
for k in $(grep -oE '[0-9]+' "$T/out2"); do
  if gone "$k"; then ok "after SIGINT $k is gone"; else fail "after SIGINT $k survived"; kill -9 "$k"; fi
done

# --timeout: the job is ended, exit 124, and it says so.
start=$(date +%s%N)
run launch --timeout 0.5 --grace 100 -n 1 "$H/berth_helper_ignore_term"
took=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "timeout: 124" "$RC" 124
expect_contains "timeout: says so" "$ERR" "timed out"
expect_eq "timeout: ended within 3 s" "$(( took < 3000 ))" 1
finish
