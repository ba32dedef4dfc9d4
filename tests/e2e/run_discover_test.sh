#!/usr/bin/env bash
# Discovery: foreach = { sample = { glob = "data/{sample}.fastq" } } expands a step once
# per matching file, values sorted; a new file is found by the next run (a settled
# record does not hide it); a pattern that matches nothing is an error naming it.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p/data"
cd "$T/p"
printf 'AAA\n' >data/b.fastq
printf 'CC\n' >data/a.fastq
printf 'x\n' >data/notes.txt
cat >pipeline.toml <<'X'
[[step]]
name = "count-{sample}"
foreach = { sample = { glob = "data/{sample}.fastq" } }
inputs = { reads = "data/{sample}.fastq" }
run = "wc -c < {in.reads} > {out.n}"
outputs = ["n"]
X

names() { json "' '.join(s['name'] + '=' + s['state'] for s in j['steps'])"; }

run run pipeline.toml --format json
expect_eq "a match: exit 0" "$RC" 0
expect_eq "a match: one step per file, sorted" "$(names)" "count-a=executed count-b=executed"
expect_eq "a match: the value reached the command" "$(tr -d ' ' <results/count-b/n)" 4
run run pipeline.toml --format json
expect_eq "a rerun: all cached" "$(names)" "count-a=cached count-b=cached"
expect_eq "a rerun: settled" "$(json "j.get('settled', False)")" True

# A new file: found, not hidden by the settled record.
printf 'GGGGG\n' >data/c.fastq
run run pipeline.toml --format json
expect_eq "a new file: its step runs" "$(names)" "count-a=cached count-b=cached count-c=executed"
run run pipeline.toml --format json
expect_eq "then settled again" "$(json "j.get('settled', False)")" True
rm data/a.fastq
run run pipeline.toml --format json
expect_eq "a file gone: its step gone" "$(names)" "count-b=cached count-c=cached"

# No match: an error naming the step, the key and the pattern, before anything runs.
sed -i 's|data/{sample}.fastq" }|data/{sample}.fq" }|' pipeline.toml
expect_bad_input "no match" \
  "step 'count-{sample}': foreach.sample.glob: \"data/{sample}.fq\": matches no file" \
  run pipeline.toml
finish
