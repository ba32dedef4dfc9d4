#!/usr/bin/env bash
# What a run leaves is its own (spec 04 §7.4, §7.5): --keep-failed keeps a failed step's
# staging directory with a command.sh that fails the same way from there, and the
# failure names it (without the flag no directory is named); a result is a copy the
# store does not share, so editing it changes no stored object and a rerun restores it;
# a whole run removes the results of steps no longer in the pipeline, never a user's
# file; a results directory belongs to one pipeline file.
. "$(dirname "$0")/common.sh"

# ---- --keep-failed ----
mkdir "$T/k"
cd "$T/k"
echo "the data" >data.txt
cat >pipeline.toml <<'X'
[[step]]
name = "prep"
run = "echo 7 > {out.n}"
outputs = ["n"]
[[step]]
name = "check"
inputs = { n = "@prep/n", data = "data.txt" }
run = "cat {in.data} {in.n}; echo \"limit=$LIMIT\"; exit 3"
outputs = ["r"]
[[step]]
name = "silent"
run = "true"
outputs = ["x"]
X
LIMIT=5 run run pipeline.toml --no-step-output
expect_eq "a failing run: exit 1" "$RC" 1
expect_contains "the unwritten output is named by its place" "$OUT" \
  "declared output 'x' was not written (out/x)"
if [[ $OUT == *staging* || $OUT == *failed/* ]]; then
  fail "without --keep-failed a failure names a directory: $OUT"
else
  ok "without --keep-failed no directory is named"
fi
expect_eq "without --keep-failed nothing is kept" \
  "$(test -e .berth/pipelines/pipeline.toml/failed && echo kept || echo none)" none

LIMIT=5 run run pipeline.toml --no-step-output --keep-failed
kept=$T/k/.berth/pipelines/pipeline.toml/failed
expect_eq "--keep-failed: exit 1" "$RC" 1
expect_contains "the failure names the kept directory" "$OUT" \
  "failed    check: rank 0 (sh) on"
expect_contains "the failure names the kept directory" "$OUT" "kept in $kept/check "
expect_contains "an unwritten output is named where it is kept" "$OUT" \
  "declared output 'x' was not written ($kept/silent/out/x)"
expect_eq "the exit status is kept" "$(cat "$kept/check/exit-status")" 3
expect_contains "the output is kept" "$(cat "$kept/check/output")" "limit=5"
expect_eq "the environment is kept" "$(grep -c "^export LIMIT=5\$" "$kept/check/env")" 1
# Run from elsewhere with nothing of this environment: the same failure.
set +e
rerun=$(cd / && env -i PATH=/usr/bin:/bin "$kept/check/command.sh" 2>&1)
rc=$?
set -e
expect_eq "command.sh fails as the step did" "$rc" 3
expect_eq "command.sh reads the kept inputs in the kept environment" "$rerun" "the data
7
limit=5"
set +e
(cd / && "$kept/silent/command.sh")
rc=$?
set -e
expect_eq "a step that exited 0 and wrote no output: its status, and command.sh's" \
  "$(cat "$kept/silent/exit-status") $rc" "0 0"
LIMIT=5 run run pipeline.toml --no-step-output --keep-failed
expect_eq "a later failure replaces the kept one" "$(ls "$kept" | tr '\n' ' ')" "check silent "
expect_eq "the staging area keeps nothing of it" "$(ls -A .berth/cache/staging | wc -l)" 0

# ---- results are copies of their own ----
mkdir "$T/r"
cd "$T/r"
cat >pipeline.toml <<'X'
[[step]]
name = "make"
run = "echo hello > {out.greeting}; mkdir -p {out.plots}; echo p1 > {out.plots}/p1.txt"
outputs = ["greeting", "plots/"]
X
run run pipeline.toml
expect_eq "results: the run succeeded" "$RC" 0
expect_eq "a result shares no inode with the store" \
  "$(stat -c %h results/make/greeting) $(stat -c %h results/make/plots/p1.txt)" "1 1"
expect_eq "a result is read-only" "$(stat -c %a results/make/greeting)" 444
chmod u+w results/make/greeting results/make/plots/p1.txt
echo edited >results/make/greeting
echo edited >results/make/plots/p1.txt
run store verify --store "file://$T/r/.berth/store"
expect_eq "editing results changes no stored object" "$RC:$(tail -1 <<<"$OUT")" \
  "0:3 object(s) verified, 0 bad"
run run pipeline.toml
expect_eq "a rerun restores the results" \
  "$RC $(cat results/make/greeting) $(cat results/make/plots/p1.txt)" "0 hello p1"

# ---- results of steps no longer in the pipeline ----
mkdir "$T/g"
cd "$T/g"
cat >pipeline.toml <<'X'
[[step]]
name = "a"
run = "echo a > {out.o}"
outputs = ["o"]
[[step]]
name = "b"
run = "echo b > {out.o}"
outputs = ["o"]
[[step]]
name = "c"
run = "echo c > {out.o}"
outputs = ["o"]
X
run run pipeline.toml
echo mine >results/b/notes.txt
echo mine >results/mine.txt
printf '[[step]]\nname = "a"\nrun = "echo a > {out.o}"\noutputs = ["o"]\n' >pipeline.toml
run run pipeline.toml a
expect_eq "a targeted run removes nothing" "$(ls results/b results/c | tr '\n' ' ')" \
  "results/b: notes.txt o  results/c: o "
run run pipeline.toml
expect_eq "a whole run: exit 0" "$RC" 0
expect_contains "a notice names the removed results" "$ERR" \
  "berth: removed the results of 2 step(s) no longer in the pipeline (their objects stay in the store): $T/g/results/b/, $T/g/results/c/"
expect_eq "only what berth wrote is removed" "$(cd results && find . -type f | sort | tr '\n' ' ')" \
  "./.berth-results ./a/o ./b/notes.txt ./mine.txt "
run run pipeline.toml
expect_eq "said once" "$(grep -c 'removed the results' <<<"$ERR" || true)" 0
printf '[[step]]\nname = "c"\nrun = "echo c > {out.o}"\noutputs = ["o"]\n' >>pipeline.toml
run run pipeline.toml --format json
expect_eq "a step put back is cached from the store" \
  "$(json "[s['state'] for s in j['steps']]") $(cat results/c/o)" "['cached', 'cached'] c"

# ---- two pipelines in one folder ----
mkdir "$T/two"
cd "$T/two"
printf '[[step]]\nname = "s"\nrun = "echo P > {out.o}"\noutputs = ["o"]\n' >pipeline.toml
printf '[[step]]\nname = "s"\nrun = "echo O > {out.o}"\noutputs = ["o"]\n' >other.toml
run run pipeline.toml
run run other.toml
expect_eq "two pipelines keep their own results" "$(cat results/s/o) $(cat results-other/s/o)" "P O"
expect_bad_input "a results directory of another pipeline is refused" \
  "the results directory results belongs to the pipeline $T/two/pipeline.toml" \
  run other.toml --results results
expect_contains "the refusal names both files and --results" "$ERR" \
  "not to $T/two/other.toml: give this run a results directory of its own with --results DIR"
expect_bad_input "a dry run is refused too" "belongs to the pipeline" \
  run other.toml --results results --dry-run
expect_eq "the refused run changed nothing" "$(cat results/s/o)" P

finish
