#!/usr/bin/env bash
# berth run --dry-run: would-run steps counted as such, each reason said once, the
# commands as they would run (--commands), a many-step pipeline summarised per step
# template unless --every-step; and steps with cores = 0, which take no core from the
# pool: more of them run at once than there are cores, within -j (spec 04 §2.3, §7).
. "$(dirname "$0")/common.sh"
copy_quickstart "$T/q"
cd "$T/q"

# 1. Nothing has run: every step would run, counted as would-run and not as skipped.
run run pipeline.toml --dry-run
expect_eq "dry run: exit 0" "$RC" 0
expect_contains "dry run: the summary counts would-run steps" "$OUT" \
  "4 step(s): 4 would run, 0 cached, 0 failed, 0 skipped, 0 refused in"
expect_contains "dry run: a step's line" "$OUT" \
  "would-run count-a: new: no earlier run of this step is recorded here"
expect_contains "dry run: a step downstream" "$OUT" \
  "would-run total: an input it reads would be recomputed"
expect_eq "dry run: no reason says 'would run' again" "$(grep -c 'would run:' <<<"$OUT" || true)" 0
run run pipeline.toml --dry-run --format json
expect_eq "dry run json: would_run, skipped" "$(json "(j['would_run'], j['skipped'])")" "(4, 0)"
expect_eq "dry run json: states" "$(json "sorted({s['state'] for s in j['steps']})")" \
  "['would-run']"
[[ ! -e results ]] && ok "dry run: nothing materialised" || fail "dry run materialised results"

# 2. After count-a ran: it is cached, said once; the rest would run.
run run pipeline.toml count-a
run run pipeline.toml --dry-run
expect_contains "cached: its reason once" "$OUT" \
  "cached    count-a: the store has a result for this key"
expect_eq "cached: 'cached' said once on its line" \
  "$(grep -c 'cached: ' <<<"$OUT" || true)" 0
expect_contains "after count-a: the summary" "$OUT" "4 step(s): 3 would run, 1 cached,"
run run pipeline.toml --format json
expect_eq "an ordinary run has no would_run count" "$(json "'would_run' in j")" "False"

# 3. --commands: each step that would run, name first, its command as it would run.
printf 'zeta\nalpha\nzeta\n' >data/b.txt
run run pipeline.toml --dry-run --commands
expect_eq "commands: exit 0" "$RC" 0
expect_eq "commands: one entry per would-run step, name first" \
  "$(grep -v '^[0-9]* step(s)' <<<"$OUT")" \
  $'count-b: sort in/b.txt | uniq -c > out/counts\ntotal: cat in/parts.0/counts in/parts.1/counts in/parts.2/counts > out/sum'
# Run as printed in a directory laid out as its staging directory: the bytes the real
# run then stores.
mkdir -p "$T/stage/in" "$T/stage/out"
cp data/b.txt "$T/stage/in/b.txt"
(cd "$T/stage" && sh -c "$(sed -n 's/^count-b: //p' <<<"$OUT")")
run run pipeline.toml --dry-run --commands --format json
expect_eq "commands json: the command of a would-run step" \
  "$(json "[s.get('command') for s in j['steps'] if s['name'] == 'count-b']")" \
  "['sort in/b.txt | uniq -c > out/counts']"
run run pipeline.toml
expect_eq "the command printed is the command run" "$(cat "$T/stage/out/counts")" \
  "$(cat results/count-b/counts)"
expect_bad_input "--commands without --dry-run" "--commands goes with --dry-run" \
  run pipeline.toml --commands
expect_bad_input "--every-step without --dry-run" "--every-step goes with --dry-run" \
  run pipeline.toml --every-step

# 4. Many steps: past 50 lines, one line per step template, saying how to see each.
mkdir -p "$T/many"
cat >"$T/many/pipeline.toml" <<'X'
[[step]]
name = "item-{i}"
foreach = { i = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59] }
run = "echo {i} > {out.o}"
outputs = ["o"]

[[step]]
name = "sum"
inputs = { parts = ["@item-*/o"] }
run = "cat {in.parts} > {out.s}"
outputs = ["s"]
X
run run "$T/many/pipeline.toml" item-3
run run "$T/many/pipeline.toml" --dry-run
expect_eq "many: three lines and the summary" "$(grep -c '' <<<"$OUT")" 4
expect_contains "many: the template's line" "$OUT" \
  "item-{i}: 60 step(s), 59 would-run, 1 cached; e.g. would-run item-0: new: no earlier run"
expect_contains "many: the fan-in's line" "$OUT" \
  "sum: 1 step(s), 1 would-run; e.g. would-run sum: an input it reads would be recomputed"
expect_contains "many: says how to see every line" "$OUT" \
  "(61 step lines summarised per step template; --every-step lists each step)"
run run "$T/many/pipeline.toml" --dry-run --every-step
expect_eq "--every-step: a line per step" "$(grep -c '^would-run item-\|^cached    item-' <<<"$OUT")" 60
expect_contains "--every-step: the cached one" "$OUT" "cached    item-3: the store has a result"
run run "$T/many/pipeline.toml" --dry-run --commands
expect_eq "--commands: every command, never summarised" "$(grep -c '^item-[0-9]*: echo' <<<"$OUT")" 59

# 5. cores = 0: a negative count is refused naming the step and the field.
mkdir -p "$T/io"
printf '[[step]]\nname = "fetch"\nrun = "true"\ncores = -1\n' >"$T/io/bad.toml"
expect_bad_input "cores = -1: names the step and the field" \
  "step 'fetch': cores: -1 is out of range [0, 65536]" run "$T/io/bad.toml"
printf '[[step]]\nname = "fetch"\nrun = "true"\ncores = 0\ntasks = 2\n' >"$T/io/bad2.toml"
expect_bad_input "cores = 0 with tasks: names both" "step 'fetch': cores: 0 (no core of its own" \
  run "$T/io/bad2.toml"

# Six steps on a pool of two cores, each noting when it started and ended; the most that
# ran at once is counted from those notes (no timing decides the outcome).
# io PIPELINE CORES: a pipeline of six sleeping steps of `cores = CORES`.
io() {
  mkdir -p "$T/io/$1"
  cat >"$T/io/$1/pipeline.toml" <<X
[defaults]
cores = $2

[[step]]
name = "io-{i}"
foreach = { i = [1, 2, 3, 4, 5, 6] }
run = "date +%s%N > $T/io/$1/{i}.start; sleep 0.6; date +%s%N > $T/io/$1/{i}.end; echo {i} > {out.o}"
outputs = ["o"]
X
}
most_at_once() {
  python3 - "$1" <<'PY'
import sys
d = sys.argv[1]
events = []
for i in range(1, 7):
    events.append((int(open(f"{d}/{i}.start").read()), 1))
    events.append((int(open(f"{d}/{i}.end").read()), -1))
now = most = 0
for _, e in sorted(events, key=lambda x: (x[0], x[1])):
    now += e
    most = max(most, now)
print(most)
PY
}
io held 1
run run "$T/io/held/pipeline.toml" --host localhost:2 --format json
expect_eq "cores = 1: every step ran" "$RC $(json "j['executed']")" "0 6"
held=$(most_at_once "$T/io/held")
((held <= 2)) && ok "cores = 1: never more at once than the two cores ($held)" ||
  fail "cores = 1: $held at once on two cores"
io free 0
run run "$T/io/free/pipeline.toml" --host localhost:2 --format json
expect_eq "cores = 0: every step ran" "$RC $(json "j['executed']")" "0 6"
most=$(most_at_once "$T/io/free")
((most > 2)) && ok "cores = 0: more at once than the two cores ($most)" ||
  fail "cores = 0: at most $most at once on two cores"
expect_eq "cores = 0: bound to no core" "$(json "sorted({s['cores'] for s in j['steps']})")" "['']"
expect_contains "cores = 0: the report says so" "$(json "j['steps'][0]['notices']")" \
  "cores = 0: it took no core from the pool and was bound to none"
io capped 0
run run "$T/io/capped/pipeline.toml" --host localhost:2 -j 1 --format json
expect_eq "cores = 0, -j 1: every step ran" "$RC $(json "j['executed']")" "0 6"
expect_eq "cores = 0, -j 1: one at a time" "$(most_at_once "$T/io/capped")" 1

# A dry run writes nothing: in a folder that never ran, no store, cache, report or
# results appear, and every step would run; its store, once made, is left as it was.
copy_quickstart "$T/fresh"
run run "$T/fresh/pipeline.toml" --dry-run --format json
expect_eq "fresh dry run: every step would run" "$RC $(json "j['would_run']")" "0 4"
expect_eq "fresh dry run: nothing created" "$(ls -A "$T/fresh" | tr '\n' ' ')" "data pipeline.toml "
run run "$T/fresh/pipeline.toml" --format json
snapshot() { (cd "$T/fresh/.berth/store" && find . -printf '%p %s %T@\n' | sort && find . -type f -exec sha256sum {} + | sort); }
before=$(snapshot)
printf 'new\n' >>"$T/fresh/data/a.txt"
run run "$T/fresh/pipeline.toml" --dry-run --format json
expect_eq "dry run after an edit: two would run" "$RC $(json "j['would_run']")" "0 2"
expect_eq "dry run after an edit: the store as it was" "$(snapshot)" "$before"
finish
