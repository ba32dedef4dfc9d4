#!/usr/bin/env bash
# berth run's settled path (spec 04 §7.1): after a run in which every step was cached
# or executed, the next run of the same pipeline answers from that run's record by
# stat() alone, reporting the very steps the ordinary path would; and every change the
# ordinary path would notice (the pipeline's bytes, an input, an input edited with its
# mtime put back, a result, an object, a tool's version, the results directory, the
# pool) sends the run down the ordinary path, which gets the right answer and records
# afresh.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p/data"
cd "$T/p"
for i in 1 2 3; do printf 'v%s\n' "$i" >"data/$i.txt"; done
printf 'tool 1\n' >toolver
cat >pipeline.toml <<X
[pipeline]
name = "settle"

[tools.v]
version = ["cat", "$T/p/toolver"]

[[step]]
name = "w-{i}"
foreach = { i = [1, 2, 3] }
inputs = { src = "data/{i}.txt" }
cmd = ["cp", "{in.src}", "{out.o}"]
outputs = ["o"]
tools = ["v"]

[[step]]
name = "sum"
inputs = { parts = ["@w-1/o", "@w-2/o", "@w-3/o"] }
run = "cat {in.parts} > {out.o}"
outputs = ["o"]
X

settled() { json "j.get('settled', False)"; }
state() { json "[s['state'] for s in j['steps'] if s['name']=='$1'][0]"; }
counts() { json "'%d executed %d cached' % (j['executed'], j['cached'])"; }

run run pipeline.toml --format json
expect_eq "full run: exit 0" "$RC" 0
expect_eq "full run: all executed, not settled" "$(counts) $(settled)" "4 executed 0 cached False"
# A run that executed every step leaves a record too: the first rerun is settled, and
# reports each executed step as a cache hit.
run run pipeline.toml --format json
expect_eq "first rerun: settled" "$(counts) $(settled)" "0 executed 4 cached True"
first=$(json "json.dumps(j['steps'], sort_keys=True)")
# What the ordinary path reports for the same state: the index (and the record in it)
# removed, so the run rehashes, keys, reads rows — and settles again.
rm -f .berth/cache/index.sqlite*
run run pipeline.toml --format json
expect_eq "ordinary rerun: all cached" "$(counts) $(settled)" "0 executed 4 cached False"
ordinary=$(json "json.dumps(j['steps'], sort_keys=True)")
expect_eq "settled after executing: the steps the ordinary path reports" "$first" "$ordinary"
run run pipeline.toml --format json
expect_eq "second rerun: settled" "$(counts) $(settled)" "0 executed 4 cached True"
expect_eq "settled: exit 0, nothing on stderr" "$RC:$ERR" "0:"
expect_eq "settled: the same steps as the ordinary run reported" \
  "$(json "json.dumps(j['steps'], sort_keys=True)")" "$ordinary"
expect_eq "settled: counts say nothing else happened" \
  "$(json "[j[k] for k in ('failed','skipped','refused','cancelled')] + [j['problems'], j['divergences']]")" \
  "[0, 0, 0, 0, [], []]"
expect_eq "settled: last-run.json is this report" \
  "$(python3 -c 'import json; print(json.load(open(".berth/pipelines/pipeline.toml/last-run.json"))["settled"])')" True

# The run is stored as a row whose steps are an object: every settled run shares it.
# The newest row: its name's pid does not order runs (pids wrap), nor does its
# started time, to the second, order runs within one second.
newest_run_row() { ls -t .berth/store/rows/v1/runs | head -1; }
last=$(newest_run_row)
obj=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps_object"])' \
  ".berth/store/rows/v1/runs/$last")
run store get "$obj" --store "file://$T/p/.berth/store"
expect_eq "runs row: its steps object holds the steps" \
  "$(json "json.dumps(j, sort_keys=True)")" "$ordinary"
expect_eq "runs row: small" "$(($(stat -c %s ".berth/store/rows/v1/runs/$last") < 2000))" 1
run report pipeline.toml
expect_contains "berth report reads a settled run" "$OUT" "0 executed, 4 cached"

# Text output: the same summary line as an ordinary all-cached run.
run run pipeline.toml
expect_contains "settled, text: summary" "$OUT" "4 step(s): 0 executed, 4 cached, 0 failed"

# settle: runs until a run is settled, so that each case starts settled: at most three
# (one that executes, one that records, one that is settled).
settle() {
  local k
  for k in 1 2 3; do
    run run pipeline.toml --format json "$@"
    [[ $(settled) == True ]] && return
  done
  fail "could not settle again: $(counts) $(settled)"
}

# The pipeline's mtime is not its bytes; a comment is.
touch pipeline.toml
run run pipeline.toml --format json
expect_eq "touched pipeline: still settled" "$(settled)" True
printf '# a comment\n' >>pipeline.toml
run run pipeline.toml --format json
expect_eq "edited pipeline: ordinary, all cached" "$(counts) $(settled)" "0 executed 4 cached False"
run run pipeline.toml --format json
expect_eq "edited pipeline: settles again" "$(settled)" True

# One step's definition edited: that step runs again; every other step is reused from
# the record by its fingerprint, its entry exactly as the settled run reported it.
others() { json "json.dumps([s for s in j['steps'] if s['name'] != 'sum'], sort_keys=True)"; }
before=$(others)
kept_before=$(ls .berth/cache/settled/)
sed -i 's/run = "cat {in.parts} > {out.o}"/run = "cat {in.parts} >{out.o}"/' pipeline.toml
run run pipeline.toml --format json
expect_eq "edited step: it ran, the others did not" "$(counts) $(state sum)" \
  "1 executed 3 cached executed"
expect_eq "edited step: the others' entries are the settled run's" "$(others)" "$before"
expect_eq "edited step: result" "$(cat results/sum/o)" "$(cat results/w-1/o results/w-2/o results/w-3/o)"
# Its report is the record's steps object with the entries that differ in place: the
# report printed and last-run.json, written each their own way, are the same bytes.
expect_eq "edited step: the report printed is last-run.json" \
  "$(cmp "$T/out" .berth/pipelines/pipeline.toml/last-run.json && echo same)" same
# Its row names the steps a rerun reports (kept for the record, not stored again) and
# carries the executed step's own entry: the two together are the run's steps.
last=$(newest_run_row)
expect_eq "edited step: the row's steps are the rerun's and the one that ran" "$(python3 - \
  ".berth/store/rows/v1/runs/$last" .berth/store .berth/cache/settled .berth/pipelines/pipeline.toml/last-run.json <<'PY'
import json, os, sys
row = json.load(open(sys.argv[1]))
obj = row["steps_object"]
steps = json.load(open(os.path.join(sys.argv[2], "objects", obj[7:9], obj[9:])))
ran = {s["name"]: s for s in row.get("steps_changed", [])}
mine = [ran.get(s["name"], s) for s in steps]
print(sorted(ran), [s["state"] for s in steps if s["name"] == "sum"],
      os.path.exists(os.path.join(sys.argv[3], obj[7:] + ".json")),
      mine == json.load(open(sys.argv[4]))["steps"])
PY
)" "['sum'] ['cached'] True True"
# The record keeps the same steps object and carries the rerun's entry of the step that
# ran as an override of it: an edit rewrites the record, not the steps.
expect_eq "edited step: the same steps object kept" "$(ls .berth/cache/settled/)" "$kept_before"
expect_eq "edited step: the record overrides one entry" \
  "$(grep -c '^override ' .berth/cache/settled/*.record)" 1
run run pipeline.toml --format json
expect_eq "edited step: settles again" "$(settled) $(counts)" "True 0 executed 4 cached"
# The settled run reports the object with the override in place, and its row says so.
expect_eq "edited step: the settled row's steps are its report's" "$(python3 - \
  ".berth/store/rows/v1/runs/$(newest_run_row)" .berth/store .berth/pipelines/pipeline.toml/last-run.json <<'PY'
import json, os, sys
row = json.load(open(sys.argv[1]))
obj = row["steps_object"]
steps = json.load(open(os.path.join(sys.argv[2], "objects", obj[7:9], obj[9:])))
changed = {s["name"]: s for s in row.get("steps_changed", [])}
report = json.load(open(sys.argv[3]))["steps"]
print(sorted(changed), [changed.get(s["name"], s) for s in steps] == report,
      [s for s in report if s["name"] == "sum"][0]["state"])
PY
)" "['sum'] True cached"

# An input's content.
printf 'two\n' >data/2.txt
run run pipeline.toml --format json
expect_eq "input edited: ordinary" "$(settled)" False
expect_eq "input edited: w-2 and sum executed" "$(state w-2) $(state sum) $(state w-1)" \
  "executed executed cached"
expect_eq "input edited: result" "$(cat results/w-2/o)" two
expect_eq "input edited: the report printed is last-run.json" \
  "$(cmp "$T/out" .berth/pipelines/pipeline.toml/last-run.json && echo same)" same
# After a run that executed some steps and found others cached, the settled answer
# is still the ordinary one.
run run pipeline.toml --format json
expect_eq "after a mixed run: settled" "$(settled)" True
mixed=$(json "json.dumps(j['steps'], sort_keys=True)")
rm -f .berth/cache/index.sqlite*
run run pipeline.toml --format json
expect_eq "after a mixed run: the ordinary path reports the same steps" \
  "$(json "json.dumps(j['steps'], sort_keys=True)")" "$mixed"
settle

# An input removed: the run fails before any step starts, naming it, as an ordinary
# run would; put back, the run settles again. (The record's check knows the other
# inputs exist; this one it must not vouch for.)
mv data/3.txt "$T/3.keep"
run run pipeline.toml --format json
expect_eq "input removed: exit 2, nothing ran" "$RC:$(cat results/w-3/o)" "2:v3"
expect_contains "input removed: named" "$ERR" "input file data/3.txt does not exist"
mv "$T/3.keep" data/3.txt
settle

# The same size, the mtime put back: only the ctime tells.
cp -p data/1.txt ref
printf 'V1\n' >data/1.txt
touch -r ref data/1.txt
run run pipeline.toml --format json
expect_eq "restored mtime: ordinary, w-1 executed" "$(settled) $(state w-1)" "False executed"
expect_eq "restored mtime: result" "$(cat results/w-1/o)" V1
settle

# A result removed, and one replaced by another file.
rm results/w-3/o
run run pipeline.toml --format json
expect_eq "result removed: ordinary, cached, put back" \
  "$(settled) $(state w-3) $(cat results/w-3/o)" "False cached v3"
settle
rm -f results/w-3/o && printf 'not mine\n' >results/w-3/o
run run pipeline.toml --format json
expect_eq "result replaced: ordinary, cached, put back" \
  "$(settled) $(state w-3) $(cat results/w-3/o)" "False cached v3"
settle

# An object gone from the store: the step is recomputed and the object is back.
o1=$(json "[s['outputs']['o']['object'] for s in j['steps'] if s['name']=='w-1'][0]")
of=.berth/store/objects/${o1:7:2}/${o1:9}
[[ -f $of ]] || fail "object file layout: $of not found"
rm -f "$of" results/w-1/o
run run pipeline.toml --format json
expect_eq "object removed: ordinary, w-1 executed" "$(settled) $(state w-1)" "False executed"
expect_eq "object removed: stored again" "$([[ -f $of ]] && echo yes)" yes
settle

# The steps object of the settled runs removed: the next settled run stores it again.
last=$(newest_run_row)
sobj=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps_object"])' \
  ".berth/store/rows/v1/runs/$last")
rm -f ".berth/store/objects/${sobj:7:2}/${sobj:9}"
run run pipeline.toml --format json
expect_eq "steps object removed: still settled" "$(settled)" True
run store verify "$sobj" --store "file://$T/p/.berth/store"
expect_eq "steps object removed: stored again" "$RC" 0

# The steps file beside the index: missing, or of another length, it is not used.
sfile=.berth/cache/settled/${sobj:7}.json
expect_eq "steps file: named by the steps object" "$([[ -f $sfile ]] && echo yes)" yes
mv "$sfile" "$T/steps.keep"
run run pipeline.toml --format json
expect_eq "steps file missing: ordinary, all cached" "$(settled) $(counts)" "False 0 executed 4 cached"
expect_eq "steps file missing: written again" "$(cmp -s "$sfile" "$T/steps.keep" && echo same)" same
# Replaced, not written into: the inode is the store's.
cat "$sfile" >"$T/steps.longer"
printf ' ' >>"$T/steps.longer"
mv -f "$T/steps.longer" "$sfile"
run run pipeline.toml --format json
expect_eq "steps file longer: ordinary" "$(settled)" False
settle
expect_eq "settled again: one steps file, one record" \
  "$(ls .berth/cache/settled/*.json | wc -l) $(ls .berth/cache/settled/*.record | wc -l)" "1 1"

# A tool that answers differently changes every key that names it.
printf 'tool 2\n' >toolver
run run pipeline.toml --format json
expect_eq "tool changed: ordinary, w-* executed" "$(settled) $(counts)" "False 3 executed 1 cached"
# Written once: the steps a rerun reports (new ones: three steps executed) are kept in
# the store and beside the index as one file (a file store on the same filesystem links
# the cache's file as its copy), not as two copies of what may be megabytes.
sfile=$(ls .berth/cache/settled/*.json)
sname=$(basename "$sfile" .json)
expect_eq "steps file: the store's copy itself" \
  "$(stat -c %i "$sfile")" "$(stat -c %i ".berth/store/objects/${sname:0:2}/${sname:2}")"
settle

# Another results directory is another run.
run run pipeline.toml --format json --results "$T/elsewhere"
expect_eq "other results: ordinary, all cached" "$(settled) $(counts)" "False 0 executed 4 cached"
expect_eq "other results: materialised there" "$(cat "$T/elsewhere/sum/o")" "$(cat results/sum/o)"

# Neither a dry run nor a worker takes the settled path.
settle
run run pipeline.toml --format json --dry-run
expect_eq "dry run: ordinary" "$(settled) $RC" "False 0"
run run pipeline.toml --format json --worker w1 --store "file://$T/p/.berth/store"
expect_eq "worker: ordinary, all cached" "$(settled) $(counts)" "False 0 executed 4 cached"

# A pool that can no longer hold a step: not answered from the record; the step is
# refused, as the ordinary path refuses it, and every other step is as it was.
if (($(nproc) >= 2)); then
  printf '\n[[step]]\nname = "wide"\ncmd = ["touch", "{out.o}"]\noutputs = ["o"]\ncores = 2\n' >>pipeline.toml
  settle
  run run pipeline.toml --format json --host localhost:1
  expect_eq "smaller pool: not settled, exit 1" "$(settled) $RC" "False 1"
  expect_eq "smaller pool: wide refused, the rest cached" \
    "$(json "j['refused']") $(json "j['cached']") $(json "j['executed']")" "1 4 0"
  expect_contains "smaller pool: says why" \
    "$(json "[s['reason'] for s in j['steps'] if s['name'] == 'wide'][0]")" "can never run here"
  run run pipeline.toml --format json
  expect_eq "back on the whole pool: everything cached" "$(settled) $(counts)" \
    "False 0 executed 5 cached"
  run run pipeline.toml --format json
  expect_eq "back on the whole pool: settled again" "$(settled)" True
else
  echo "skip smaller pool: fewer than 2 cores"
fi

# The index (and the record in it) removed: an ordinary run, which settles again.
rm -f .berth/cache/index.sqlite*
run run pipeline.toml --format json
expect_eq "index removed: ordinary, all cached" "$(settled) $(json "j['executed']")" "False 0"
run run pipeline.toml --format json
expect_eq "index removed: settles again" "$(settled)" True

# A last-run.json that is not a report (nested a hundred thousand deep): berth report
# refuses it by name, and a run that must explain a step still runs.
python3 -c 'print("[" * 100000)' >.berth/pipelines/pipeline.toml/last-run.json
run report pipeline.toml
expect_eq "deep last-run.json: berth report refuses it" "$RC" 2
expect_contains "deep last-run.json: says why" "$ERR" "not a run report"
printf 'three\n' >data/3.txt
run run pipeline.toml --format json
expect_eq "deep last-run.json: the run goes on" "$RC $(state w-3)" "0 executed"
# A step the record holds is explained from the recorded steps, not the report.
expect_eq "deep last-run.json: explained from the record" \
  "$(json "[s['reason'] for s in j['steps'] if s['name']=='w-3'][0]")" \
  "input 'src' changed (data/3.txt)"
# Without a record, the report is all there is, and it is not one.
rm -f .berth/cache/index.sqlite*
python3 -c 'print("[" * 100000)' >.berth/pipelines/pipeline.toml/last-run.json
printf 'four\n' >data/3.txt
run run pipeline.toml --format json
expect_eq "deep last-run.json, no record: the run goes on" "$RC $(state w-3)" "0 executed"
expect_eq "deep last-run.json, no record: nothing to compare with" \
  "$(json "[s['reason'] for s in j['steps'] if s['name']=='w-3'][0]")" \
  "new: no earlier run of this step is recorded here"


# An edit's rerun of a pipeline of more steps: its report and the steps a rerun reports
# are the record's steps object with the few entries that differ in place. A step
# reused from an entry the record carried as an override keeps that entry, through the
# next edit and the settled run after it.
mkdir -p "$T/q/in"
cd "$T/q"
for i in $(seq 1 12); do printf '%s\n' "$i" >"in/$i.txt"; done
cat >pipeline.toml <<'X'
[pipeline]
name = "splice"

[[step]]
name = "c-{i}"
foreach = { i = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] }
inputs = { src = "in/{i}.txt" }
cmd = ["cp", "{in.src}", "{out.o}"]
outputs = ["o"]
X
entry() { json "json.dumps([s for s in j['steps'] if s['name'] == '$1'][0]['outputs'], sort_keys=True)"; }
run run pipeline.toml --format json
run run pipeline.toml --format json
expect_eq "splice: settled" "$(settled)" True
steps_file=$(ls .berth/cache/settled/*.json)
printf 'one more\n' >>in/1.txt
run run pipeline.toml --format json
expect_eq "splice, first edit: c-1 executed, c-2 cached" "$(state c-1) $(state c-2)" \
  "executed cached"
expect_eq "splice, first edit: the report printed is last-run.json" \
  "$(cmp "$T/out" .berth/pipelines/pipeline.toml/last-run.json && echo same)" same
expect_eq "splice, first edit: the same steps file, one override" \
  "$(ls .berth/cache/settled/*.json) $(grep -c '^override ' .berth/cache/settled/*.record)" \
  "$steps_file 1"
c1=$(entry c-1)
printf 'two more\n' >>in/2.txt
run run pipeline.toml --format json
expect_eq "splice, second edit: c-2 executed, c-1 reused" "$(state c-2) $(state c-1)" \
  "executed cached"
expect_eq "splice, second edit: c-1's entry is the one the first edit gave it" "$(entry c-1)" "$c1"
expect_eq "splice, second edit: the report printed is last-run.json" \
  "$(cmp "$T/out" .berth/pipelines/pipeline.toml/last-run.json && echo same)" same
expect_eq "splice, second edit: the same steps file, two overrides" \
  "$(ls .berth/cache/settled/*.json) $(grep -c '^override ' .berth/cache/settled/*.record)" \
  "$steps_file 2"
c2=$(entry c-2)
run run pipeline.toml --format json
expect_eq "splice: settles again, c-1 and c-2 as the edits left them" \
  "$(settled) $(counts) $([[ $(entry c-1) == "$c1" && $(entry c-2) == "$c2" ]] && echo kept)" \
  "True 0 executed 12 cached kept"
expect_eq "splice: results" "$(cat results/c-1/o results/c-2/o)" "$(printf '1\none more\n2\ntwo more')"
# The ordinary path, asked afresh, reports the same steps.
settled_steps=$(json "json.dumps(j['steps'], sort_keys=True)")
rm -f .berth/cache/index.sqlite*
run run pipeline.toml --format json
expect_eq "splice: the ordinary path reports the same steps" \
  "$(settled) $(json "json.dumps(j['steps'], sort_keys=True)")" "False $settled_steps"

# An edit of one [[step]] table: the tables whose bytes are the record's keep their
# steps' fingerprints; but a table that finds its foreach values among the files present
# may expand otherwise from the same bytes, and is looked at again. Here "g" (one value,
# so its name need not hold it) found in/a.dat; a.dat becomes b.dat, and another
# table's definition is edited in the same breath.
mkdir -p "$T/tables/in"
cd "$T/tables"
printf 'x\n' >in/a.dat
cat >pipeline.toml <<'X'
[[step]]
name = "g"
foreach = { k = { glob = "in/{k}.dat" } }
run = "echo {k} > {out.o}"
outputs = ["o"]

[[step]]
name = "h"
run = "echo one > {out.o}"
outputs = ["o"]

[[step]]
name = "i"
run = "echo same > {out.o}"
outputs = ["o"]
X
settle
expect_eq "tables: g found a" "$(cat results/g/o)" a
mv in/a.dat in/b.dat
sed -i 's/echo one/echo two/' pipeline.toml
run run pipeline.toml --format json
expect_eq "tables: h edited and g's value changed: both run, i is reused" \
  "$(state g) $(state h) $(state i)" "executed executed cached"
expect_eq "tables: g found b" "$(cat results/g/o) $(cat results/h/o)" "b two"
settle
sed -i 's/echo same/echo other/' pipeline.toml
run run pipeline.toml --format json
expect_eq "tables: i edited: only i runs" "$(counts) $(state i)" "1 executed 2 cached executed"

finish
