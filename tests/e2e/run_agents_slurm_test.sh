#!/usr/bin/env bash
# berth run inside a 4-node allocation of the real local Slurm starts one berth agent
# per node through one srun step, and the agents run the steps (spec 08):
#   - every node runs steps, and each step's parent process is its node's agent, never
#     an srun per step;
#   - the run SIGKILLed mid-way leaves no process of it on any node within 5 s (the
#     allocation goes on meanwhile: the agents end because the run did); SIGTERM ends
#     it cleanly, its steps cancelled on every node;
#   - an agent killed mid-run: its node is named, its steps run again elsewhere and
#     every result is right;
#   - --agents off: one srun per step, as without agents.
. "$(dirname "$0")/common.sh"
need_slurm
chmod 755 "$T"
MARK=agent-mark-$$

# Each step says which process started it ($PPID: its shell's parent) and its node.
cat >"$T/p.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"] }
run = "echo {i} \$SLURMD_NODENAME \$(ps -o args= -p \$PPID | cut -d' ' -f2) >> $T/log; sleep 0.5; echo {i} > {out.o}"
outputs = ["o"]
X
if ! timeout 180 salloc -N4 -n8 "$BERTH" run "$T/p.toml" --format json >"$T/out.json" 2>"$T/err"; then
  fail "berth run with agents failed: $(tail -20 "$T/err")"
  finish
fi
OUT=$(cat "$T/out.json")
expect_eq "agents: all sixteen executed" "$(json "j['executed']")" 16
expect_eq "agents: steps on every node" "$(json "' '.join(sorted({s['node'] for s in j['steps']}))")" "n1 n2 n3 n4"
expect_eq "agents: every step started by a berth agent" "$(cut -d' ' -f3 "$T/log" | sort -u)" agent
# The step's node as the report says and as Slurm's variable says agree.
expect_eq "agents: the node a step ran on is the node it was placed on" \
  "$(python3 - "$T/out.json" "$T/log" <<'PY'
import json, sys
placed = {s['name']: s['node'] for s in json.load(open(sys.argv[1]))['steps']}
ran = {f"s-{l.split()[0]}": l.split()[1] for l in open(sys.argv[2])}
print(all(placed[k] == v for k, v in ran.items()) and len(ran) == 16)
PY
)" True

# A rerun with nothing to do starts no agent: srun, wrapped to log each call, starts no
# step (its --version and --mpi=list, which say what the launcher is, are not steps).
mkdir -p "$T/wrap"
cat >"$T/wrap/srun" <<X
#!/bin/bash
echo "\$*" >>"$T/srun.calls"
exec $(command -v srun) "\$@"
X
chmod 755 "$T/wrap/srun"
: >"$T/srun.calls"
if ! PATH="$T/wrap:$PATH" timeout 180 salloc -N4 -n8 "$BERTH" run "$T/p.toml" --format json \
    >"$T/again.json" 2>"$T/err"; then
  fail "the rerun failed: $(tail -5 "$T/err")"
fi
OUT=$(cat "$T/again.json")
expect_eq "rerun: nothing executed" "$(json "j['executed']")" 0
expect_eq "rerun: no agent started" "$(grep -c -- '--overlap' "$T/srun.calls")" 0
expect_eq "rerun: srun was wrapped" "$(grep -c -- '--version' "$T/srun.calls")" 1

# SIGKILL of the run, inside an allocation that goes on for another 10 s: every step's
# process (found by its marker) and every agent is gone within 5 s.
cat >"$T/k.toml" <<X
[[step]]
name = "k-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6", "7", "8"] }
run = "sleep 60; : $MARK; echo {i} > {out.o}"
outputs = ["o"]
X
cat >"$T/kill.sh" <<X
#!/bin/bash
"$BERTH" run "$T/k.toml" --cache "$T/kcache" >/dev/null 2>"$T/kerr" &
run=\$!
for _ in \$(seq 100); do
  [[ \$(pgrep -f "sleep 60; : $MARK" | wc -l) -ge 8 ]] && break
  sleep 0.1
done
echo "running: \$(pgrep -f "sleep 60; : $MARK" | wc -l)" >"$T/kill.log"
kill -9 \$run
for t in \$(seq 50); do
  sleep 0.1
  if [[ \$(pgrep -f "$MARK" | wc -l) -eq 0 && \$(pgrep -f "berth agent" | wc -l) -eq 0 ]]; then
    echo "gone after \$t" >>"$T/kill.log"
    break
  fi
done
echo "left: \$(pgrep -f "$MARK" | wc -l) \$(pgrep -f "berth agent" | wc -l)" >>"$T/kill.log"
sleep 10
X
chmod 755 "$T/kill.sh"
timeout 120 salloc -N4 -n8 "$T/kill.sh" 2>/dev/null
expect_eq "SIGKILL: eight steps ran before" "$(head -1 "$T/kill.log")" "running: 8"
expect_eq "SIGKILL: no step process and no agent left within 5 s" "$(tail -1 "$T/kill.log")" "left: 0 0"
pkill -9 -f "$MARK" 2>/dev/null || true

# SIGTERM of the run (scancel's, or Ctrl-C's SIGINT): it ends its steps on every node
# itself, says how the run went and exits 128 + 15; nothing is left.
cat >"$T/term.sh" <<X
#!/bin/bash
"$BERTH" run "$T/k.toml" --cache "$T/tcache" --store "file://$T/tstore" >"$T/tout" 2>"$T/terr" &
run=\$!
for _ in \$(seq 100); do
  [[ \$(pgrep -f "sleep 60; : $MARK" | wc -l) -ge 8 ]] && break
  sleep 0.1
done
kill -TERM \$run
wait \$run
echo "rc \$? left \$(pgrep -f "$MARK" | wc -l) \$(pgrep -f "berth agent" | wc -l)" >"$T/term.log"
X
chmod 755 "$T/term.sh"
timeout 120 salloc -N4 -n8 "$T/term.sh" 2>/dev/null
expect_eq "SIGTERM: the run exits 143, nothing left" "$(cat "$T/term.log")" "rc 143 left 0 0"
expect_contains "SIGTERM: it says how the run went" "$(cat "$T/tout")" "8 cancelled"
pkill -9 -f "$MARK" 2>/dev/null || true

# One agent SIGKILLed mid-run: its node is named, its steps run again elsewhere, and
# every result is right.
cat >"$T/a.toml" <<X
[[step]]
name = "a-{i}"
foreach = { i = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"] }
run = "sleep 2; echo {i} > {out.o}"
outputs = ["o"]
X
cat >"$T/agent_kill.sh" <<X
#!/bin/bash
"$BERTH" run "$T/a.toml" --results "$T/ares" --format json >"$T/a.json" 2>"$T/aerr" &
run=\$!
sleep 3
# An agent is a 'berth agent' whose parent is Slurm's step daemon.
for p in \$(pgrep -f "berth agent --node-from"); do
  if ps -o args= -p "\$(ps -o ppid= -p "\$p" | tr -d ' ')" | grep -q slurmstepd; then
    kill -9 "\$p"; echo "killed \$p" >"$T/akill.log"; break
  fi
done
wait \$run
echo "rc \$?" >>"$T/akill.log"
X
chmod 755 "$T/agent_kill.sh"
timeout 180 salloc -N4 -n8 "$T/agent_kill.sh" 2>/dev/null
expect_eq "agent killed: the run succeeded" "$(tail -1 "$T/akill.log")" "rc 0"
expect_contains "agent killed: its node is named" "$(cat "$T/aerr")" "was lost: its launcher said: srun: error: n"
OUT=$(cat "$T/a.json")
expect_eq "agent killed: all sixteen executed" "$(json "j['executed']") $(json "j['failed']")" "16 0"
# Killed 3 s in, during the second round of 2 s steps: the lost node has at most the
# two steps of the first round to its name; the ones it was running ran elsewhere.
lost=$(grep -o "the agent on '[^']*' was lost" "$T/aerr" | head -1 | cut -d"'" -f2)
expect_eq "agent killed: its steps ran on other nodes" \
  "$(json "sum(s['node'] == '$lost' for s in j['steps']) <= 2 and '$lost' != ''")" True
right=1
for i in $(seq 16); do [[ $(cat "$T/ares/a-$i/o" 2>/dev/null) == "$i" ]] || right=0; done
expect_eq "agent killed: every result is right" "$right" 1

# --agents off: each step on another node is an srun of its own.
: >"$T/log"
if ! timeout 180 salloc -N4 -n8 "$BERTH" run "$T/p.toml" --agents off --cache "$T/offcache" \
    --store "file://$T/offstore" --results "$T/offres" --format json >"$T/off.json" 2>"$T/err"; then
  fail "berth run --agents off failed: $(tail -20 "$T/err")"
  finish
fi
expect_eq "--agents off: no step started by an agent" "$(grep -c ' agent$' "$T/log")" 0
finish
