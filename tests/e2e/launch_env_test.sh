#!/usr/bin/env bash
# Environment directives in the order given, job-wide then per app; every rank told
# its rank; malformed directives refused before anything starts.
. "$(dirname "$0")/common.sh"

run launch -n 1 --prepend-env 'FOO[:]' x --set-env FOO=1 sh -c 'echo $FOO'
expect_eq "prepend then set -> set wins" "$OUT" 1
run launch -n 1 --set-env FOO=1 --prepend-env 'FOO[:]' x sh -c 'echo $FOO'
expect_eq "set then prepend -> x:1" "$OUT" x:1
FOO=outer run launch -n 1 --add-env FOO=inner sh -c 'echo $FOO'
expect_eq "add does not overwrite" "$OUT" outer
run launch -n 1 --append-env 'P[;]' b --append-env 'P[;]' c sh -c 'echo $P'
expect_eq "append onto unset, then again" "$OUT" "b;c"
# (env itself, not a shell: a shell invents a PATH when it has none)
PATHEXT=keep run launch -n 1 --unset-env PATH /usr/bin/env
expect_eq "unset PATH leaves PATHEXT" "$(printf '%s\n' "$OUT" | grep -E '^PATH(EXT)?=' | tr '\n' ' ')" "PATHEXT=keep "
BERTH_T_A=1 BERTH_T_B=2 run launch -n 1 --unset-env 'BERTH_T_*' sh -c 'echo "${BERTH_T_A-x}${BERTH_T_B-y}"'
expect_eq "unset with prefix" "$OUT" xy
SECRET=s run launch -n 1 -x SECRET -x NEW=v sh -c 'echo $SECRET$NEW'
expect_eq "-x export and set" "$OUT" sv
run launch --set-env J=job -n 1 sh -c 'echo $J' : -n 1 --set-env J=app sh -c 'echo $J'
expect_eq "app trumps job" "$(printf '%s\n' "$OUT" | sort | tr '\n' ' ')" "app job "
run launch --bind-to none -n 2 sh -c 'echo $BERTH_RANK/$BERTH_SIZE/$BERTH_LOCAL_RANK/$BERTH_APP' : -n 1 sh -c 'echo $BERTH_RANK/$BERTH_SIZE/$BERTH_LOCAL_RANK/$BERTH_APP'
expect_eq "rank variables" "$(printf '%s\n' "$OUT" | sort | tr '\n' ' ')" "0/3/0/0 1/3/1/0 2/3/0/1 "
run launch -n 1 --cpu-set 0 sh -c 'echo $BERTH_CPUS'
expect_eq "cpu list told" "$OUT" 0

# --exec-agent wraps every rank's exec.
run launch -n 1 --exec-agent 'env BERTH_AGENT=yes' sh -c 'echo $BERTH_AGENT'
expect_eq "exec agent wraps the exec" "$OUT" yes
# --report-bindings prints each rank's binding.
run launch -n 1 --cpu-set 0 --report-bindings true
expect_contains "report-bindings" "$ERR" "bound to cpus 0"
# A descriptor limit too low for the job is refused, naming the limit.
OUT=$( (ulimit -n 64; "$BERTH" launch --bind-to none -n 100 true) 2>&1 || echo "rc=$?")
expect_contains "fd limit named" "$OUT" "RLIMIT_NOFILE"
expect_contains "fd limit: exit 2" "$OUT" "rc=2"

# Malformed directives: refused with exit 2 before anything starts.
for bad in "--set-env NOVALUE" "--prepend-env PATH x" "--unset-env 1BAD" "-x MISSING_BERTH_VAR_ZZ"; do
  # shellcheck disable=SC2086
  expect_bad_input "refused: $bad" "" launch -n 1 $bad touch "$T/started"
done
[[ -e $T/started ]] && fail "a malformed directive still started the job" || ok "nothing started"
finish
