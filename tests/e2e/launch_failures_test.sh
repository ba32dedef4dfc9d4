#!/usr/bin/env bash
# Every launch failure is rendered by berth, naming the rank, the executable or
# directory, and the node — and the job ends promptly.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/adir"
printf 'echo hi\n' >"$T/noexec"; chmod 644 "$T/noexec"
printf '#!/nonexistent/interp\necho hi\n' >"$T/badinterp"; chmod 755 "$T/badinterp"
node=$(hostname -s)

run launch -n 1 no-such-program-berth
expect_eq "not found: exit 127" "$RC" 127
expect_contains "not found: names it" "$ERR" "no-such-program-berth"
expect_contains "not found: says PATH" "$ERR" "PATH"
expect_contains "not found: names the node" "$ERR" "$node"
expect_contains "not found: names the rank" "$ERR" "rank 0"
run launch -n 1 "$T/adir"
expect_contains "directory" "$ERR" "is a directory"
run launch -n 1 "$T/noexec"
expect_contains "not executable" "$ERR" "not executable"
run launch -n 1 "$T/badinterp"
expect_contains "bad interpreter" "$ERR" "interpreter"
run launch -n 1 --wdir "$T/gone" true
expect_contains "missing working directory named" "$ERR" "$T/gone"
run launch -n 1 --cpu-set 4000 true
expect_contains "binding refused names the cores" "$ERR" "4000"
# The child's PATH is searched, not berth's.
mkdir -p "$T/bin"; printf '#!/bin/sh\necho found-on-child-path\n' >"$T/bin/only-here"; chmod 755 "$T/bin/only-here"
run launch -n 1 --prepend-env 'PATH[:]' "$T/bin" only-here
expect_eq "the child's PATH is searched" "$OUT" found-on-child-path
# A bad first app of an MPMD job ends the job promptly, the second app included.
start=$(date +%s)
run launch --bind-to none -n 1 no-such-program-berth : -n 2 sleep 30
end=$(date +%s)
expect_eq "bad first app: exit 127" "$RC" 127
expect_eq "bad first app: ends promptly" "$(( end - start < 10 ))" 1
finish
