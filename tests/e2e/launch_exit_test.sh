#!/usr/bin/env bash
# berth launch: exit codes pass through (3 stays 3), death by signal is 128+S, and
# stderr says which rank, which executable and how it ended.
. "$(dirname "$0")/common.sh"

run launch -n 2 true
expect_eq "all ranks exit 0 -> 0" "$RC" 0
run launch -n 2 sh -c 'exit 3'
expect_eq "exit 3 stays 3" "$RC" 3
expect_contains "stderr names the rank and executable" "$ERR" "(sh)"
expect_contains "stderr says how it ended" "$ERR" "exited with status 3"
run launch -n 1 sh -c 'kill -TERM $$'
expect_eq "SIGTERM -> 143" "$RC" 143
expect_contains "SIGTERM named" "$ERR" "SIGTERM"
run launch -n 1 sh -c 'kill -KILL $$'
expect_eq "SIGKILL -> 137" "$RC" 137
# The first failure decides: rank 1 fails at once, rank 0 is ended by berth.
run launch --bind-to none -n 1 sleep 30 : -n 1 sh -c 'exit 5'
expect_eq "first failure decides (MPMD)" "$RC" 5
finish
