#!/usr/bin/env bash
# berth launch takes the command-line conventions of srun and mpirun: `--` before an
# app's command (each MPMD app too), --oversubscribe for more ranks than usable cores
# (unbound, said once), --host naming only this node, and --version.
. "$(dirname "$0")/common.sh"

run launch -n 2 -- sh -c 'echo hi'
expect_eq "-- before the command" "$RC" 0
expect_eq "-- : both ranks ran the command" "$OUT" $'hi\nhi'
run launch -n 1 -- sh -c 'echo "$0 $1"' -- x
expect_eq "a -- after the command is the command's" "$OUT" "-- x"
run launch -n 1 -- sh -c 'echo a$BERTH_APP' : -n 1 -- sh -c 'echo b$BERTH_APP'
expect_eq "-- in each MPMD app" "$(sort <<<"$OUT")" $'a0\nb1'
run launch -n 1 sh -c 'echo a$BERTH_APP' : -n 1 -- sh -c 'echo b$BERTH_APP'
expect_eq "-- in the second app only" "$(sort <<<"$OUT")" $'a0\nb1'
expect_bad_input "-- with no command" "no command" launch -n 1 --

# More ranks than usable cores: refused without the flag, unbound with it.
run launch -n 64 true
expect_eq "-n 64 without --oversubscribe is refused (nothing ran)" "$RC" 2
expect_contains "...saying what would allow it" "$ERR" "--oversubscribe"
run launch --oversubscribe -n 64 sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2'
expect_eq "--oversubscribe -n 64 runs" "$RC" 0
expect_eq "...64 ranks" "$(grep -c . <<<"$OUT")" 64
expect_eq "...unbound: each may use all of berth's CPUs" "$(sort -u <<<"$OUT")" \
  "$(grep Cpus_allowed_list /proc/self/status | cut -f2)"
expect_eq "...said once on stderr" "$(grep -c 'binding is off' <<<"$ERR")" 1

# --host: this node only; any other node is refused before anything runs.
run launch --host "$(hostname -s):2" -n 1 true
expect_eq "--host naming this node" "$RC" 0
run launch --host localhost -n 1 true
expect_eq "--host localhost" "$RC" 0
run launch --host othernode:2 -n 1 sh -c "touch $T/ran"
expect_eq "--host othernode is refused (nothing ran)" "$RC" 2
expect_contains "...naming the node" "$ERR" "'othernode' is not this node"
expect_eq "...before anything ran" "$([[ -e $T/ran ]] && echo ran || echo no)" no

run --version
expect_contains "--version names the version" "$OUT" "berth 0."
expect_contains "--version names the commit" "$OUT" "(commit "
finish
