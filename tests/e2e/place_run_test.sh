#!/usr/bin/env bash
# berth place --run: launches started through launch's spawner — --count launches wait
# for a release and never share a core, the first failure's code is berth's, a program
# found nowhere is named, and a signal to berth ends every launch and what it started.
. "$(dirname "$0")/common.sh"
H=$BERTH_BUILD_DIR/helpers
[[ -x $H/berth_helper_spawn_grandchild ]] || { echo "FAIL: helpers not built in $H" >&2; exit 1; }
echo "PATH=/usr/bin:/bin" >"$T/empty.env"
# One usable core: the pool grants one launch at a time.
P=(place -n 1 --auto --run --env-file "$T/empty.env" --affinity 0)

# --count 3 on one core: one after another (each sees the one before it finished), the
# second fails with 5, the third still runs, and berth exits 5.
L='echo start >>"$0"; sleep 0.2; echo end >>"$0"; n=$(grep -c end "$0"); [ "$n" -eq 2 ] && exit 5; exit 0'
run "${P[@]}" --count 3 -- sh -c "$L" "$T/log"
expect_eq "count: the first failure's code" "$RC" 5
expect_eq "count: one at a time" "$(tr '\n' ' ' <"$T/log")" "start end start end start end "

# A program found nowhere: refused before anything runs, and named.
run "${P[@]}" -- berth-no-such-program
expect_contains "missing program: named" "$ERR" "'berth-no-such-program' not found on the child's PATH"
expect_eq "missing program: exit status (bad input)" "$RC" 2

# SIGINT to berth ends the launch and its grandchild, and berth exits 130.
"$BERTH" "${P[@]}" -- sh -c 'echo $$; exec "$0"' "$H/berth_helper_spawn_grandchild" \
  >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 50); do [[ $(grep -c . "$T/out" 2>/dev/null) -ge 2 ]] && break; sleep 0.1; done
kill -INT $pid
rc=0; wait $pid || rc=$?
expect_eq "SIGINT: 130" "$rc" 130
kids=$(grep -oE '[0-9]+' "$T/out" | tr '\n' ' ')
[[ -n $kids ]] && ok "the launch reported its pids" || fail "no pids: $(cat "$T/out" "$T/err")"
for k in $kids; do
  if gone "$k"; then ok "after SIGINT $k is gone"; else fail "after SIGINT $k survived"; kill -9 "$k"; fi
done
finish
