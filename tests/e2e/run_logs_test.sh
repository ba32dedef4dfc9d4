#!/usr/bin/env bash
# Step logs: every executed step's output (stdout and stderr: prep writes one, report the
# other) is kept as an object named in its row and
# report; `berth log STEP` prints it (a failed step's too, and a cached one's after the
# local cache is gone); a failure's line names the command; `berth report` shows a
# failure's last lines; --no-step-output keeps the terminal quiet and the logs kept.
. "$(dirname "$0")/common.sh"
mkdir "$T/p"
cd "$T/p"
cat >pipeline.toml <<'X'
[[step]]
name = "prep"
run = "echo prepared; echo 'on stdout' ; echo 500500 > {out.n}"
outputs = ["n"]
[[step]]
name = "report"
inputs = { n = "@prep/n" }
run = "exec >&2; echo crunching; echo 'Traceback (most recent call last):' >&2; echo \"AssertionError: [$(cat {in.n}), 3]\" >&2; exit 1"
outputs = ["r"]
X

run run pipeline.toml
expect_eq "a failing run: exit 1" "$RC" 1
expect_contains "the failure says why" "$OUT" "failed    report: rank 0 (sh) on "
expect_contains "the failure names how to read its output" "$OUT" \
  "exited with status 1; its output: berth log report"
expect_contains "live output still reaches stderr" "$ERR" "[report] crunching"

run log report
expect_eq "berth log report: exit 0" "$RC" 0
expect_eq "berth log report: its whole output" "$OUT" "crunching
Traceback (most recent call last):
AssertionError: [500500, 3]"
run log pipeline.toml prep
expect_eq "berth log PIPELINE STEP: the executed step's output" "$OUT" "prepared
on stdout"

# berth report: the failure with its last lines and where the rest is.
run report
expect_contains "report: the failure's last line" "$OUT" "  | AssertionError: [500500, 3]"
expect_contains "report: where the rest is" "$OUT" "(its whole output: berth log report)"

# The report names each log object; a row names the executed step's.
run run pipeline.toml --format json
expect_eq "the failed step's log is named" "$(json "j['steps'][1]['log'][:7]")" "sha256:"
expect_contains "its last lines are in the report" "$(json "j['steps'][1]['log_tail']")" \
  "AssertionError: [500500, 3]"
key=$(json "j['steps'][0]['key']")
log=$(json "j['steps'][0]['log']")
run store cat --store "file://$T/p/.berth/store" "rows/v1/steps/$key"
expect_eq "the row names the log" "$(json "j['log']")" "$log"

# A cached step still has its log — from its row — with this machine's cache gone.
rm -rf .berth/cache results
run run pipeline.toml --no-step-output --format json
expect_eq "prep is cached" "$(json "j['steps'][0]['state']")" cached
expect_eq "--no-step-output: no step output on stderr" "$(grep -c '^\[' <<<"$ERR" || true)" 0
run log prep
expect_eq "a cached step's log" "$OUT" "prepared
on stdout"
run log report
expect_contains "the failed step's log, with output off" "$OUT" "AssertionError: [500500, 3]"

# Errors: a step the last run does not have; a step that never ran.
expect_bad_input "unknown step" "has no step 'nope'" log nope
cat >>pipeline.toml <<'X'
[[step]]
name = "after"
inputs = { r = "@report/r" }
run = "cat {in.r}"
X
run run pipeline.toml
expect_bad_input "a skipped step has no log" "step 'after' has no log: it was skipped" log after
finish
