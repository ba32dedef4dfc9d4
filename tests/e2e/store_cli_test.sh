#!/usr/bin/env bash
# berth store and the store it works on (spec 05): with a pipeline (--pipeline P, or
# gc's argument) the one `berth run P` uses; with neither --store nor a pipeline,
# pipeline.toml's here; the store chosen is named on stderr; a missing one is an error
# with nothing created; gc --dry-run and run --dry-run leave the store exactly as it
# was, times included.
. "$(dirname "$0")/common.sh"
copy_quickstart "$T/q"
cd "$T"
run run q/pipeline.toml
expect_eq "a run of q/pipeline.toml from its parent: exit 0" "$RC" 0
STORE=$T/q/.berth/store

# --- A pipeline names its store: the one the run above used, not ./.berth/store.
run store verify --pipeline q/pipeline.toml
expect_eq "verify --pipeline: exit 0" "$RC" 0
expect_contains "verify --pipeline: the run's objects" "$(tail -1 <<<"$OUT")" "object(s) verified, 0 bad"
expect_eq "verify --pipeline: something was verified" "$(grep -c '^ok' <<<"$OUT")" \
  "$(tail -1 <<<"$OUT" | cut -d' ' -f1)"
expect_contains "verify --pipeline: says which store" "$ERR" "store file://$STORE"
expect_eq "verify --pipeline: nothing made here" "$(ls -A "$T" | grep -c '^\.berth$')" 0
key=$(ls "$STORE/rows/v1/steps" | head -1)
run store cat --pipeline q/pipeline.toml "rows/v1/steps/$key"
expect_eq "cat --pipeline: exit 0" "$RC" 0
expect_contains "cat --pipeline: the step row" "$OUT" "\"key\""

# --- No pipeline, no --store: pipeline.toml's store in the working directory, as
# `berth run pipeline.toml` there would use.
(cd q && "$BERTH" store verify >"$T/out" 2>"$T/err") && RC=0 || RC=$?
expect_eq "verify in the pipeline's folder: exit 0" "$RC" 0
expect_contains "verify in the pipeline's folder: names the store" "$(cat "$T/err")" \
  "store file://$STORE (the one \`berth run pipeline.toml\` uses)"
run store verify
expect_eq "verify where no pipeline ran: exit 2" "$RC" 2
expect_contains "verify where no pipeline ran: names the store it looked for" "$ERR" \
  "file://$T/.berth/store: no berth store there"
expect_eq "verify where no pipeline ran: nothing created" "$(ls -A "$T" | grep -c '^\.berth$')" 0

# --- A pipeline that never ran has no store: an error, nothing created.
mkdir -p "$T/none" && cp q/pipeline.toml "$T/none/"
run store verify --pipeline none/pipeline.toml
expect_eq "verify of a pipeline that never ran: exit 2" "$RC" 2
expect_contains "verify of a pipeline that never ran: names its store" "$ERR" \
  "file://$T/none/.berth/store: no berth store there"
expect_eq "verify of a pipeline that never ran: nothing created" "$(ls -A "$T/none")" "pipeline.toml"
run store gc --dry-run none/pipeline.toml
expect_eq "gc --dry-run of a pipeline that never ran: exit 2" "$RC" 2
expect_eq "gc --dry-run of a pipeline that never ran: nothing created" "$(ls -A "$T/none")" "pipeline.toml"

# --- --store and a pipeline name two stores: refused.
run store verify --pipeline q/pipeline.toml --store "file://$STORE"
expect_eq "--store with --pipeline: exit 2" "$RC" 2
expect_contains "--store with --pipeline: says why" "$ERR" "give --store or a pipeline"

# --- gc --dry-run writes nothing: every path, size, mtime and byte as it was.
snapshot() {
  (cd "$1" && find . -printf '%p %y %s %m %T@\n' | sort &&
    find . -type f -exec sha256sum {} + | sort)
}
before=$(snapshot "$STORE")
sleep 0.05
run store gc --dry-run --keep-runs 0 --grace 0 q/pipeline.toml
expect_eq "gc --dry-run PIPELINE: exit 0" "$RC" 0
expect_contains "gc --dry-run PIPELINE: would delete the unkept" "$OUT" "would delete"
expect_contains "gc --dry-run PIPELINE: says which store" "$ERR" "store file://$STORE"
expect_eq "gc --dry-run leaves the store identical, times included" "$(snapshot "$STORE")" "$before"
run store gc --dry-run --store "file://$STORE"
expect_eq "gc --dry-run --store: exit 0" "$RC" 0
expect_eq "gc --dry-run --store leaves the store identical, times included" \
  "$(snapshot "$STORE")" "$before"
# A dry run of the pipeline, with a step that would run, leaves the store as it was too.
echo more >>q/data/a.txt
run run q/pipeline.toml --dry-run
expect_eq "run --dry-run with a changed input: exit 0" "$RC" 0
expect_contains "run --dry-run with a changed input: count-a would run" "$OUT" "count-a"
expect_eq "run --dry-run leaves the store identical, times included" "$(snapshot "$STORE")" "$before"
# The snapshot sees a change: a real collection of everything unkept changes it.
run store gc --keep-runs 0 --grace 0 q/pipeline.toml
expect_eq "gc PIPELINE: exit 0" "$RC" 0
if [[ $(snapshot "$STORE") == "$before" ]]; then
  fail "gc without --dry-run changed nothing the snapshot sees"
else
  ok "gc without --dry-run changes the store (the snapshot would notice a dry run that wrote)"
fi
finish
