#!/usr/bin/env bash
# The command line: --help, --version with the commit, a subcommand's --help, and a
# malformed command line exiting 2; no library loaded from the working directory, and
# the libraries loaded on first use not loaded at start-up.
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

# A word close to a subcommand or a flag that exists is said with it, on one line.
expect_bad_input "a misspelt subcommand" "berth: 'rnu' is not a subcommand (did you mean 'run'?)" \
  rnu p.toml
expect_bad_input "a misspelt flag" "berth run: '--dryrun' is not a flag (did you mean '--dry-run'?)" \
  run p.toml --dryrun
expect_bad_input "a misspelt flag with a value" \
  "berth run: '--confg' is not a flag (did you mean '--config'?)" run p.toml --confg=a=1
run run p.toml --zzzzzz
expect_eq "a flag close to none: CLI11's own refusal, exit 2" "$RC" 2
expect_contains "... naming it" "$ERR" "--zzzzzz"

# The libraries berth loads are never looked for in the working directory: run from
# a directory holding a file named after each one (none of them a library), it starts
# as anywhere else. A build-tree rpath with an empty entry made it load them from here.
mkdir "$T/libs"
needed=$(readelf -d "$BERTH" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
[[ -n $needed ]] || fail "readelf found no library berth needs"
for lib in $needed; do echo "not a library" >"$T/libs/$lib"; done
got=$(cd "$T/libs" && "$BERTH" --version 2>&1) && rc=0 || rc=$?
expect_eq "berth --version from a directory of files named like its libraries exits 0" "$rc" 0
expect_contains "... and prints its version" "$got" "berth 0."

# libcrypto, libpmix, libsqlite3 and libcurl are loaded when first used, not when berth
# starts: each cost every process start-up time (libcrypto 1 ms, libpmix with libevent
# and libmunge 0.7, libsqlite3 0.5 on the development VM), and most commands use none.
# The loader's own account of what it loaded for `berth --version`:
loaded=$(LD_DEBUG=files "$BERTH" --version 2>&1 >/dev/null |
  sed -n 's/.*file=\([^ ]*\) \[0\];  needed by.*/\1/p' | sort -u | tr '\n' ' ')
expect_contains "the loader lists what berth loads at start-up" "$loaded" "libstdc++"
for lazy in libcrypto libpmix libsqlite3 libcurl; do
  if [[ " $loaded" == *" $lazy"* ]]; then
    fail "$lazy is loaded when berth starts: $loaded"
  else
    ok "$lazy is not loaded when berth starts"
  fi
done
finish
