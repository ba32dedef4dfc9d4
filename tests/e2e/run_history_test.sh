#!/usr/bin/env bash
# A pipeline's record is its own, and its history is the store's (spec 04 §8, §8.1): two
# pipelines in one folder each keep their own report, logs, methods and results; a
# targeted run never narrows what `methods` describes nor hides the other steps' logs;
# `berth runs` lists every run the store keeps, a worker's among them; `report --run`
# and `methods --run` answer for an earlier run.
. "$(dirname "$0")/common.sh"

copy_quickstart "$T/q"
cd "$T/q"

# --- Two pipelines in one folder, with a step of the same name.
cat >other.toml <<'X'
[[step]]
name = "total"
run = "echo THIS IS OTHER.TOML; echo other > {out.sum}"
outputs = ["sum"]
X
run run pipeline.toml --format json
expect_eq "quickstart: ran" "$RC $(json "j['executed']")" "0 4"
run run other.toml --format json
expect_eq "other: ran" "$RC $(json "j['executed']")" "0 1"
run log pipeline.toml total
expect_eq "log: the quickstart's total is its own" "$(grep -c 'OTHER' <<<"$OUT")" 0
run log other.toml total
expect_contains "log: other's total is other's" "$OUT" "THIS IS OTHER.TOML"
run report pipeline.toml --format json
expect_eq "report: the quickstart's own" "$(json "j['pipeline_path'].endswith('/pipeline.toml'), j['executed']")" \
  "True 4"
run report other.toml --format json
expect_eq "report: other's own" "$(json "j['pipeline_path'].endswith('/other.toml'), j['executed']")" \
  "True 1"
run methods pipeline.toml
expect_contains "methods: the quickstart's four outputs" "$OUT" "The 4 output(s)"
run methods other.toml
expect_contains "methods: other's one output" "$OUT" "The 1 output(s)"
expect_eq "results: the quickstart's total in results/" "$(cat results/total/sum)" \
  "$(cat results/count-a/counts results/count-b/counts results/count-c/counts)"
expect_eq "results: other's in results-other/" "$(cat results-other/total/sum)" other
[[ -e .berth/pipelines/pipeline.toml/last-run.json && -e .berth/pipelines/other.toml/last-run.json ]] &&
  ok "each pipeline's report in its own directory" || fail "reports: $(find .berth/pipelines)"

# --- A targeted run after an edit: methods still describes the whole pipeline, and
# the steps it did not run keep their logs.
printf 'zebra\nzebra\n' >>data/a.txt
run run pipeline.toml 'count-a' --format json
expect_eq "targeted: one step ran" "$RC $(json "j['executed']") $(json "j['targets']")" \
  "0 1 ['count-a']"
run methods pipeline.toml
expect_contains "targeted, then methods: the whole pipeline" "$OUT" "The 4 output(s)"
run log pipeline.toml total
expect_eq "targeted, then log of a step it did not run: found" "$RC" 0
run log pipeline.toml count-a
expect_eq "targeted, then log of the step it ran" "$RC" 0

# --- berth runs: three runs of the quickstart and a worker's, newest first.
run run pipeline.toml --format json
first_all=$(json "j['run']")
run run pipeline.toml --worker=w7 --store "file://$T/q/.berth/store" --format json
expect_eq "worker run: exit 0" "$RC" 0
run runs pipeline.toml --format json
expect_eq "runs: four of the quickstart (other's not among them)" "$(json "len(j)")" 4
expect_eq "runs: newest first, the worker's on top" "$(json "j[0].get('worker')")" w7
expect_eq "runs: every run its own id" "$(json "len(set(r['id'] for r in j))")" 4
expect_eq "runs: each says where and how long" \
  "$(json "all(r['host'] and r['elapsed_s'] >= 0 and 'executed' in r for r in j)")" True
expect_eq "runs: the targeted run says so" "$(json "[r.get('targets') for r in j][2]")" "['count-a']"
oldest=$(json "j[-1]['id']")
run runs pipeline.toml
expect_contains "runs: text names the worker" "$OUT" "w7"
expect_contains "runs: text names the targets" "$OUT" "(targets: count-a)"
run runs other.toml
expect_contains "runs of other: one" "$OUT" "1 run(s) of other.toml"

# --- report and methods of an earlier run.
run report pipeline.toml --run "$oldest" --format json
expect_eq "report --run: the first run's counts" "$(json "j['run'], j['executed'], len(j['steps'])")" \
  "$oldest 4 4"
run report pipeline.toml --run "$first_all"
expect_contains "report --run (text): that run's counts" "$OUT" "1 executed, 3 cached"
run methods pipeline.toml --run "$oldest"
expect_contains "methods --run" "$OUT" "The 4 output(s)"
run report pipeline.toml --run 1999
expect_eq "report --run of no run: exit 2" "$RC" 2
expect_contains "report --run of no run: says so" "$ERR" "no such run of this pipeline"
run report pipeline.toml --run 20
expect_contains "report --run of many: says so" "$ERR" "runs start so"

# --- The page of an all-cached run draws the runs that computed its steps.
run run pipeline.toml --format json
expect_eq "all cached" "$(json "j['cached']")" 4
run report pipeline.toml --html "$T/all.html"
expect_eq "html: exit 0" "$RC" 0
expect_contains "html: an earlier run's timeline" "$(cat "$T/all.html")" 'id="timeline-earlier-0"'
expect_eq "html: every cached step drawn among the earlier runs" \
  "$(python3 - "$T/all.html" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
data = json.loads(re.search(r'id="berth-run">(.*?)</script>', page, re.S).group(1))
print(sum(len(e["steps"]) for e in data["earlier"]))
PY
)" 4

# --- Never run: each command says so in a sentence.
run runs never.toml
expect_contains "runs of a pipeline never run" "$OUT" "never.toml has no run kept"
expect_contains "runs of a pipeline never run: why" "$OUT" "it has not run here yet"
mkdir "$T/empty" && cd "$T/empty"
run runs
expect_contains "runs where nothing ran, no store: says so" "$ERR" "pipeline.toml has not run here yet"
expect_eq "runs where nothing ran: nothing made" "$(ls -A)" ""
finish
