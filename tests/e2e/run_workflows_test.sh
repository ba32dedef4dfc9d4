#!/usr/bin/env bash
# The example workflows, run end to end as their users would: a split/process/merge
# whose new sample joins every fan-in that covers it; a sweep read from a CSV table
# whose new row runs alone with the aggregate; an ensemble under [config] whose
# override reruns exactly the steps it changes; an analysis whose scripts sit beside
# the pipeline, where editing one reruns exactly the steps that run it; a simulation
# whose snapshots are a directory output, read whole by its analysis.
. "$(dirname "$0")/common.sh"

# counts: "executed cached failed skipped refused" of the report in $OUT.
counts() { json "' '.join(str(j[k]) for k in ('executed','cached','failed','skipped','refused'))"; }
# executed: the executed steps' names, sorted.
executed() { json "' '.join(sorted(s['name'] for s in j['steps'] if s['state'] == 'executed'))"; }

# 1. Split, process, merge: per-sample fan-in, then a summary of every sample.
cp -r "$BERTH_SOURCE_DIR/examples/split-merge" "$T/sm"
rm -rf "$T/sm/.berth" "$T/sm/results"
cd "$T/sm"
run run pipeline.toml --format json
expect_eq "split-merge: exit 0" "$RC" 0
expect_eq "split-merge: 3 samples x (3 splits + 3 sums + merge) + summary" "$(counts)" "22 0 0 0 0"
expect_eq "split-merge: the summary" "$(cat results/summary/table)" $'alpha 15\nbeta 100\ngamma 300'
# A new sample found by the glob is split, summed, merged and joins the summary.
printf 'id,value\nr1,7\nr2,8\nr3,9\n' >data/delta.csv
run run pipeline.toml --format json
expect_eq "split-merge: new sample: exit 0" "$RC" 0
expect_eq "split-merge: only the new sample's steps and the summary ran" "$(executed)" \
  "merge-delta split-delta-0 split-delta-1 split-delta-2 sum-delta-0 sum-delta-1 sum-delta-2 summary"
expect_eq "split-merge: the new sample joined the summary" "$(cat results/summary/table)" \
  $'alpha 15\nbeta 100\ndelta 24\ngamma 300'
# An edit of one sample's data reruns that sample's chain and the summary.
printf 'id,value\nr1,100\nr2,201\n' >data/gamma.csv
run run pipeline.toml --format json
expect_contains "split-merge: gamma's merge reran" "$(executed)" "merge-gamma"
expect_eq "split-merge: the summary follows" "$(tail -1 results/summary/table)" "gamma 301"

# 2. A sweep from a CSV table, with an aggregate.
cp -r "$BERTH_SOURCE_DIR/examples/sweep" "$T/sw"
rm -rf "$T/sw/.berth" "$T/sw/results"
cd "$T/sw"
run run pipeline.toml --format json
expect_eq "sweep: exit 0" "$RC" 0
expect_eq "sweep: three rows and the aggregate" "$(counts)" "4 0 0 0 0"
expect_eq "sweep: each row's params reached its run" "$(cat results/aggregate/table)" \
  $'decay rate=0.25 steps=4 left=0.316406\ndecay rate=0.5 steps=4 left=0.062500\ngrowth rate=0.1 steps=3 left=1.331000'
printf 'growth,0.2,2\n' >>sweep.csv
run run pipeline.toml --dry-run
expect_contains "sweep: a dry run says the row is new" "$OUT" "would-run sim-growth-0.2: new"
run run pipeline.toml --format json
expect_eq "sweep: a new row runs alone, with the aggregate" "$(executed)" "aggregate sim-growth-0.2"
sed -i 's/^decay,0.5,4$/decay,0.5,5/' sweep.csv
run run pipeline.toml --dry-run
expect_contains "sweep: an edited row's param, old -> new" "$OUT" \
  "would-run sim-decay-0.5: param 'steps' changed (4 -> 5)"
run run pipeline.toml --format json
expect_eq "sweep: the edited row runs, with the aggregate" "$(executed)" "aggregate sim-decay-0.5"
expect_contains "sweep: the new row is aggregated" "$(cat results/aggregate/table)" \
  "growth rate=0.2 steps=2 left=1.440000"
run run pipeline.toml --format json
expect_eq "sweep: then nothing runs" "$(counts)" "0 5 0 0 0"

# 3. An ensemble under [config], overridden for one run.
cp -r "$BERTH_SOURCE_DIR/examples/ensemble" "$T/en"
rm -rf "$T/en/.berth" "$T/en/results"
cd "$T/en"
run run pipeline.toml --format json
expect_eq "ensemble: exit 0" "$RC" 0
expect_eq "ensemble: four members and the mean" "$(counts)" "5 0 0 0 0"
first=$(cat results/mean/summary)
run run pipeline.toml --config steps=200 --dry-run
expect_contains "ensemble: a dry run names the value, old -> new" "$OUT" \
  "would-run member-1: config 'steps' changed (100 -> 200)"
run run pipeline.toml --config steps=200 --format json
expect_eq "ensemble: --config steps=200 reruns every member and the mean" "$(counts)" "5 0 0 0 0"
[[ $(cat results/mean/summary) != "$first" ]] && ok "ensemble: the override changed the mean" ||
  fail "ensemble: the override left the mean as it was"
run run pipeline.toml --configfile long.toml --format json
expect_eq "ensemble: --configfile reruns them too" "$(counts)" "5 0 0 0 0"
run run pipeline.toml --format json
expect_eq "ensemble: back to the file's values: every result from the store" "$(counts)" "0 5 0 0 0"
expect_eq "ensemble: and the first mean again" "$(cat results/mean/summary)" "$first"
expect_bad_input "ensemble: an undeclared name, with the closest" \
  "--config: 'step' is not declared in pipeline.toml's [config] (did you mean 'steps'?)" \
  run pipeline.toml --config step=5
expect_bad_input "ensemble: a value of the wrong type" \
  "--config: steps: 'many' must be an integer, as [config] declares it" \
  run pipeline.toml --config steps=many

# 4. Scripts beside the pipeline, named in commands as typed in a shell.
cp -r "$BERTH_SOURCE_DIR/examples/analysis" "$T/an"
rm -rf "$T/an/.berth" "$T/an/results"
cd "$T/an"
run run pipeline.toml --format json
expect_eq "analysis: exit 0" "$RC" 0
expect_eq "analysis: every step ran its script" "$(counts)" "5 0 0 0 0"
expect_eq "analysis: the report" "$(cat results/report/txt)" \
  $'control: n=3 mean=3.00\ntreated: n=2 mean=20.00'
expect_eq "analysis: no step left files it did not declare" \
  "$(json "[n for n in j['notices'] if 'did not declare' in n]")" "[]"
# Editing one script reruns exactly the steps whose commands name it.
printf '\n# counts blank lines too\n' >>scripts/stats.py
run run pipeline.toml --dry-run
expect_contains "analysis: the dry run names the script" "$OUT" \
  "would-run stats-control: input './scripts/stats.py' changed (scripts/stats.py)"
run run pipeline.toml --format json
# Their results are the same bytes, so the report reading them is found in the store.
expect_eq "analysis: the stats steps reran; the report, reading what it read, did not" \
  "$(executed) $(json "[s['state'] for s in j['steps'] if s['name'] == 'report'][0]")" \
  "stats-control stats-treated cached"
run run pipeline.toml --format json
expect_eq "analysis: then nothing runs" "$(counts)" "0 5 0 0 0"
printf '# report.py, reworded\n' >>scripts/report.py
run run pipeline.toml --format json
expect_eq "analysis: editing the report script reruns the report alone" "$(executed)" "report"
# 5. A directory output: as many snapshots as the configuration asks for, read whole.
cp -r "$BERTH_SOURCE_DIR/examples/snapshots" "$T/sn"
rm -rf "$T/sn/.berth" "$T/sn/results"
cd "$T/sn"
run run pipeline.toml --format json
expect_eq "snapshots: exit 0" "$RC" 0
expect_eq "snapshots: both ran" "$(executed)" "energy simulate"
expect_eq "snapshots: five snapshots and the run's parameters" \
  "$(cd results/simulate/snapshots && find . -type f | sort | tr '\n' ' ')" \
  "./meta/run.txt ./t0000.csv ./t0005.csv ./t0010.csv ./t0015.csv ./t0020.csv "
expect_eq "snapshots: the analysis read every one" "$(wc -l <results/energy/energy.csv)" 6
expect_eq "snapshots: heat is conserved at the start" "$(sed -n 2p results/energy/energy.csv)" \
  "t0000,100.0000,100.0000"
run run pipeline.toml --config steps=40 --format json
expect_eq "snapshots: steps=40: nine snapshots, both reran" \
  "$(executed) $(ls results/simulate/snapshots/*.csv | wc -l)" "energy simulate 9"
run run pipeline.toml --format json
expect_eq "snapshots: back to the file's configuration: found in the store" "$(counts)" \
  "0 2 0 0 0"
expect_eq "snapshots: and its five snapshots are the result again" \
  "$(ls results/simulate/snapshots/*.csv | wc -l)" 5
finish
