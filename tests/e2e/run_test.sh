#!/usr/bin/env bash
# berth run end to end: the quickstart pipeline, a rerun that is all cached, early
# cutoff, a corrupted object recomputed, a failing step's dependents skipped, dry run,
# errors in the file, the report, methods and berth store.
. "$(dirname "$0")/common.sh"
copy_quickstart "$T/q"
cd "$T/q"

run run pipeline.toml --format json
expect_eq "quickstart: exit 0" "$RC" 0
expect_eq "quickstart: 4 executed" "$(json "j['executed']")" 4
expect_eq "quickstart: no divergences" "$(json "j['divergences']")" "[]"
expect_eq "quickstart: total materialised" "$(grep -c . results/total/sum)" \
  "$(cat results/count-*/counts | grep -c .)"
run run pipeline.toml --format json
expect_eq "rerun: nothing executed" "$(json "j['executed']")" 0
expect_eq "rerun: all cached" "$(json "j['cached']")" 4

# Early cutoff: count-a's input changes, its counts (lines-sorted) mean the same.
printf 'dog\nthe\nquick\nbrown\nfox\nthe\nlazy\n' >data/a.txt
run run pipeline.toml --format json
expect_eq "cutoff: count-a re-executed" "$(json "[s['state'] for s in j['steps'] if s['name']=='count-a'][0]")" executed
expect_eq "cutoff: total stays cached" "$(json "[s['state'] for s in j['steps'] if s['name']=='total'][0]")" cached

# A corrupted object is detected, reported and recomputed.
obj=$(json "[s['outputs']['sum']['object'] for s in j['steps'] if s['name']=='total'][0]")
f=$(find .berth/store/objects -type f -name "${obj#sha256:??}" | head -1)
[[ -n $f ]] || f=$(grep -rl . .berth/store/objects | head -1)
chmod u+w "$f"; echo garbage >"$f"
rm -rf results
run run pipeline.toml --format json
expect_eq "corrupt: run succeeds" "$RC" 0
expect_contains "corrupt: reported" "$(json "j['problems']")" "sha256"
expect_eq "corrupt: total recomputed" "$(json "[s['state'] for s in j['steps'] if s['name']=='total'][0]")" executed
run store verify --store "file://$T/q/.berth/store"
expect_eq "store verify: all good after recompute" "$RC" 0

# A failing step: its dependent is skipped, an independent step goes on; exit 1.
cat >"$T/fail.toml" <<'X'
[[step]]
name = "bad"
run = "echo broken >&2; exit 3"
outputs = ["o"]
[[step]]
name = "after-bad"
inputs = { x = "@bad/o" }
run = "cat {in.x} > {out.o}"
outputs = ["o"]
[[step]]
name = "good"
run = "echo fine > {out.o}"
outputs = ["o"]
X
run run "$T/fail.toml" --format json
expect_eq "failure: exit 1" "$RC" 1
expect_eq "failure: states" "$(json "[s['state'] for s in j['steps']]")" "['failed', 'skipped', 'executed']"
expect_contains "failure: says which and how" "$(json "j['steps'][0]['reason']")" "exited with status 3"

# Dry run: says what would run, runs nothing.
copy_quickstart "$T/d"
run run "$T/d/pipeline.toml" --dry-run
expect_contains "dry run: would run" "$OUT" "would-run"
[[ -d $T/d/results ]] && fail "dry run wrote results" || ok "dry run wrote nothing"

# Errors in the file are reported before anything runs, naming file, line and step.
printf '[[step]]\nname = "s"\nrun = "true"\nbogus = 1\n' >"$T/e1.toml"
expect_bad_input "unknown key" "e1.toml:4" run "$T/e1.toml"
printf '[[step]]\nname = "s"\nrun = "cat {in.x}"\ninputs = { x = "missing.txt" }\n' >"$T/e2.toml"
expect_bad_input "missing input" "missing.txt" run "$T/e2.toml"
printf '[[step]]\nname = "a"\ninputs = { x = "@b/o" }\nrun = "true"\noutputs = ["o"]\n[[step]]\nname = "b"\ninputs = { x = "@a/o" }\nrun = "true"\noutputs = ["o"]\n' >"$T/e3.toml"
expect_bad_input "cycle" "cycle" run "$T/e3.toml"
printf '[[step]]\nname = "s"\nrun = "echo {nothing}"\n' >"$T/e4.toml"
expect_bad_input "placeholder naming nothing" "nothing" run "$T/e4.toml"

# The report, its HTML timeline, the methods paragraph.
run report pipeline.toml --html "$T/r.html"
expect_eq "report: exit 0" "$RC" 0
expect_eq "report html: a row per executed step" "$(grep -c '<tr class="executed"' "$T/r.html")" 1
xmllint --html --noout "$T/r.html" 2>"$T/xerr" && ok "report html parses" || fail "html: $(cat "$T/xerr")"
run methods pipeline.toml
expect_contains "methods: names the engine" "$OUT" "berth 0."
expect_contains "methods: names the platform" "$OUT" "$(uname -s)"

# berth store by hand.
echo hello >"$T/h.txt"
run store put --store "file://$T/s" "$T/h.txt"
name=${OUT%% *}
expect_eq "store put names by sha256" "$name" "sha256:$(sha256sum "$T/h.txt" | cut -d' ' -f1)"
run store get --store "file://$T/s" "$name"
expect_eq "store get returns the bytes" "$OUT" hello
run store get --store "file://$T/s" "sha256:$(printf '0%.0s' $(seq 64))"
expect_eq "store get of a missing object: exit 2" "$RC" 2
# A store that is not there is an error for every command that reads one, naming it, and
# nothing is created (a mistyped path is not an empty store that verifies); `store put`
# makes one, as `berth run` does.
for cmd in "verify" "gc --dry-run" "gc" "cat rows/v1/steps/x" "get sha256:$(printf '0%.0s' $(seq 64))"; do
  # shellcheck disable=SC2086
  run store $cmd --store "file://$T/typo/store"
  expect_eq "store $cmd on a missing store: exit 2" "$RC" 2
  expect_contains "store $cmd on a missing store: names it" "$ERR" "$T/typo/store: no berth store there"
  expect_eq "store $cmd on a missing store: nothing created" "$(ls -A "$T" | grep -c '^typo$')" 0
done
mkdir -p "$T/bare"
run store verify --store "file://$T/bare"
expect_eq "store verify on a directory that is no store: exit 2" "$RC" 2
expect_eq "store verify on a directory that is no store: left empty" "$(ls -A "$T/bare")" ""
# A dry run of the collector writes nothing: every file, name and byte, as it was.
tree() { (cd "$1" && find . -type f -exec sha256sum {} + | sort && find . | sort); }
before=$(tree "$T/q/.berth/store")
run store gc --dry-run --store "file://$T/q/.berth/store"
expect_eq "store gc --dry-run: exit 0" "$RC" 0
expect_eq "store gc --dry-run leaves the store byte for byte" "$(tree "$T/q/.berth/store")" "$before"
# Before any run, report, log and methods say so in a sentence, not as a file error.
mkdir -p "$T/fresh"
printf '[[step]]\nname = "a"\nrun = "echo a > {out.o}"\noutputs = ["o"]\n' >"$T/fresh/pipeline.toml"
for cmd in "report" "log" "methods"; do
  args=("$T/fresh/pipeline.toml")
  [ "$cmd" = log ] && args+=(a)
  run "$cmd" "${args[@]}"
  expect_eq "$cmd before any run: exit 2" "$RC" 2
  expect_contains "$cmd before any run: says it has not run" "$ERR" \
    "$T/fresh/pipeline.toml has not run here yet: there is no report at"
done
# -j 1: one step at a time, though the node has cores for more. Each step notes when it
# starts and ends; no two of those intervals overlap.
mkdir -p "$T/j"
cat >"$T/j/pipeline.toml" <<X
[[step]]
name = "s-{i}"
foreach = { i = [1, 2, 3] }
run = "date +%s%N > $T/j/{i}.start; sleep 0.3; date +%s%N > $T/j/{i}.end; echo {i} > {out.o}"
outputs = ["o"]
X
run run "$T/j/pipeline.toml" -j 1 --format json
expect_eq "-j 1: every step ran" "$RC $(json "j['executed']")" "0 3"
overlaps=$(python3 - "$T/j" <<'PY'
import sys
d = sys.argv[1]
spans = sorted((int(open(f"{d}/{i}.start").read()), int(open(f"{d}/{i}.end").read()))
               for i in (1, 2, 3))
print(sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1]))
PY
)
expect_eq "-j 1: no two steps ran at once" "$overlaps" 0
run run "$T/j/pipeline.toml" -j 0
expect_eq "-j 0 is refused" "$RC" 2
finish
