#!/usr/bin/env bash
# The command line: --help, --version with the commit, a subcommand's --help, and a
# malformed command line exiting 2.
. "$(dirname "$0")/common.sh"

run --version
expect_eq "--version exits 0" "$RC" 0
expect_contains "--version names berth" "$OUT" "berth 0."
commit=$(git -C "$BERTH_SOURCE_DIR" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
expect_contains "--version names the git commit" "$OUT" "commit $commit"

run --help
expect_eq "--help exits 0" "$RC" 0
expect_contains "--help lists alloc" "$OUT" "alloc"

run alloc --help
expect_eq "alloc --help exits 0" "$RC" 0
expect_contains "alloc --help lists --env-file" "$OUT" "--env-file"
expect_contains "alloc --help lists --hostfile" "$OUT" "--hostfile"

run alloc --format yaml
expect_eq "unknown --format exits 2" "$RC" 2

run frobnicate
expect_eq "unknown subcommand exits 2" "$RC" 2
finish
