#!/usr/bin/env bash
# Nothing outlives berth (spec 03 §9): SIGKILL of `berth launch`, of `berth run` and of a
# `--worker` mid-step leaves no process of theirs a second later, found by a marker in
# the command line (a child's and a grandchild's); the next run cleans the killed run's
# staging and completes with the right result.
. "$(dirname "$0")/common.sh"
M=berth-guard-$$-$RANDOM

# killed_leaves_nothing NAME PID PATTERN: SIGKILLs PID once PATTERN is running, and
# checks that nothing matching PATTERN is left within a second of berth's death.
killed_leaves_nothing() {
  local name=$1 pid=$2 pat=$3
  for _ in $(seq 200); do
    [[ $(pgrep -fc -- "$pat" || true) -ge 2 ]] && break
    sleep 0.05
  done
  [[ $(pgrep -fc -- "$pat" || true) -ge 2 ]] || { fail "$name: the work never started"; return; }
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  local left=1
  for _ in $(seq 10); do
    pgrep -f -- "$pat" >/dev/null || { left=0; break; }
    sleep 0.1
  done
  if [[ $left -eq 0 ]]; then
    ok "$name: no process left a second after SIGKILL"
  else
    fail "$name: left running: $(pgrep -af -- "$pat" | head -3)"
    pkill -KILL -f -- "$pat" || true
  fi
}

# --- berth launch: two ranks, each a shell with a grandchild.
"$BERTH" launch -n 2 --oversubscribe -- sh -c "bash -c 'exec -a $M-launch sleep 300' & wait # $M-launch" \
  >"$T/launch.out" 2>"$T/launch.err" &
killed_leaves_nothing "launch" $! "$M-launch"

# --- berth run: a step that waits for a file before it finishes.
mkdir -p "$T/p"
cat >"$T/p/p.toml" <<X
[[step]]
name = "first"
run = "echo one > {out.o}"
outputs = ["o"]
[[step]]
name = "held"
inputs = { x = "@first/o" }
run = "if [ ! -e $T/go ]; then bash -c 'exec -a $M-run sleep 300'; fi; cat {in.x} > {out.o} # $M-run"
outputs = ["o"]
X
"$BERTH" run "$T/p/p.toml" >"$T/run.out" 2>"$T/run.err" &
pid=$!
killed_leaves_nothing "run" $pid "$M-run"
staged=$(ls "$T/p/.berth/cache/staging" 2>/dev/null | grep -c "^$pid\\." || true)
expect_eq "run: the killed run left its staging behind" "$(( staged > 0 ))" 1
touch "$T/go"
run run "$T/p/p.toml" --format json
expect_eq "run: the next run succeeds" "$RC" 0
expect_eq "run: the held step executes" \
  "$(json "[s['state'] for s in j['steps'] if s['name']=='held'][0]")" executed
expect_eq "run: its result is right" "$(cat "$T/p/results-p/held/o")" one
expect_eq "run: the killed run's staging is gone" \
  "$(ls "$T/p/.berth/cache/staging" | grep -c "^$pid\\." || true)" 0
rm -f "$T/go"

# --- berth run --worker: the same, for a worker on a file:// store.
mkdir -p "$T/w"
sed "s/$M-run/$M-worker/g" "$T/p/p.toml" >"$T/w/p.toml"
# A short lease: the killed worker's claim is then given up to expiry within seconds
# (a dead holder's claim is taken after it expires, spec 06), not the default 10m.
"$BERTH" run "$T/w/p.toml" --worker=w1 --lease 4s --store "file://$T/store" >"$T/w.out" 2>"$T/w.err" &
pid=$!
killed_leaves_nothing "worker" $pid "$M-worker"
touch "$T/go"
run run "$T/w/p.toml" --worker=w1 --lease 4s --store "file://$T/store" --format json
expect_eq "worker: the next run succeeds" "$RC" 0
expect_eq "worker: its result is right" "$(cat "$T/w/results-p/held/o")" one
expect_eq "worker: the killed worker's staging is gone" \
  "$(ls "$T/w/.berth/cache/workers/w1/staging" | grep -c "^$pid\\." || true)" 0
finish
