#!/usr/bin/env bash
# berth agent on its own, fed the run's side of the wire by hand (spec 08 §3): it says
# hello with its node's offer, runs a job it is sent and answers with its output and
# outcome, ignores what is not for it or does not parse, and ends when its stdin does.
# And the bad input around it: no node, a variable not set, an --agents that is none.
. "$(dirname "$0")/common.sh"
expect_bad_input "agent: a node is needed" "give --node NAME" agent
expect_bad_input "agent: --node-from a variable not set" \
  "--node-from BERTH_NO_SUCH_VARIABLE: not set here" agent --node-from BERTH_NO_SUCH_VARIABLE
run run "$T/p.toml" --agents sometimes
expect_eq "run --agents sometimes: exit 2" "$RC" 2
expect_contains "run --agents sometimes: names the flag" "$ERR" "--agents"

# The requests: one for another node, one line of garbage, the run's environment, a job
# (echo in a shell, exit 3); then stdin ends.
cat >"$T/requests" <<'X'
{"t":"run","to":"elsewhere","id":9,"job":{"apps":[{"argv":["sh","-c","echo not me"]}]}}
this is not JSON
{"t":"env","to":"a1","env":{"PATH":"/usr/bin:/bin","GREETING":"hi"}}
{"t":"run","to":"a1","id":1,"job":{"apps":[{"argv":["sh","-c","echo $GREETING; exit 3"],"ranks":1}],"mpi":"none"}}
X
# stdin stays open for 3 s after the requests (the job's answer comes first), then ends.
(cat "$T/requests"; sleep 3) | timeout 30 "$BERTH" agent --node a1 >"$T/answers" 2>"$T/agent.err"
expect_eq "agent: ends with its stdin, exit 0" "$?" 0
python3 - "$T/answers" >"$T/decoded" <<'PY'
import base64, json, sys
parts, out = {}, []
for line in open(sys.argv[1]):
    tag, node, mark, rest = line.rstrip("\n").split(" ", 3)
    assert tag == "@berth1" and len(line) <= 960, line[:80]
    parts[node] = parts.get(node, "") + rest
    if mark == ".":
        m = json.loads(parts.pop(node))
        if m["t"] == "hello":
            print("hello", m["node"], "cores" if m["offer"]["cores"] else "no cores")
        elif m["t"] == "out":
            print("out", m["id"], base64.b64decode(m["b64"]).decode().strip())
        elif m["t"] == "exit":
            print("exit", m["id"], m["outcome"]["exit_code"])
PY
expect_eq "agent: hello, its output, its exit; nothing for another node" "$(cat "$T/decoded")" \
  "hello a1 cores
out 1 hi
exit 1 3"
finish
