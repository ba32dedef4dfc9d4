#!/usr/bin/env bash
# Directory outputs (spec 04 §2.3, spec 05 §1.1): a step declaring `outputs =
# ["plots/"]` fills a directory with any number of files; it is stored as a tree, its
# result is the directory whole, a consumer gets it under in/, a rerun is cached and
# settled, a stray file in the result is removed and an edited one restored, a tree
# whose bytes did not change does not rerun what reads it, what a directory output
# cannot hold is refused by name, and collection keeps every file a kept tree names.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p"
cd "$T/p"
counts() { json "' '.join(str(j[k]) for k in ('executed','cached','failed'))"; }
settled() { json "j.get('settled', False)"; }

cat >pipeline.toml <<'X'
[config]
n = 3

[[step]]
name = "make"
run = "for i in $(seq {config.n}); do echo $i > {out.plots}/p$i.txt; done; mkdir -p {out.plots}/sub/deep {out.plots}/empty; echo deep > {out.plots}/sub/deep/d.txt; printf '#!/bin/sh\\necho hi\\n' > {out.plots}/run.sh; chmod +x {out.plots}/run.sh"
outputs = ["plots/"]

[[step]]
name = "list"
inputs = { p = "@make/plots" }
run = "cd {in.p} && find . | sort > {out.o}; ./run.sh >> {out.o}"
outputs = ["o"]
X
run run pipeline.toml --format json
expect_eq "tree: exit 0" "$RC" 0
expect_eq "tree: both executed" "$(counts)" "2 0 0"
expect_eq "tree: the form is tree, its object its canonical hash" \
  "$(json "[(o['form'], o['object'] == o['canonical']) for s in j['steps'] if s['name']=='make' for o in s['outputs'].values()]")" \
  "[('tree', True)]"
expect_eq "tree: the result is the directory, whole" \
  "$(cd results/make/plots && find . | sort | tr '\n' ' ')" \
  ". ./empty ./p1.txt ./p2.txt ./p3.txt ./run.sh ./sub ./sub/deep ./sub/deep/d.txt "
expect_eq "tree: file bytes" "$(cat results/make/plots/p2.txt results/make/plots/sub/deep/d.txt)" $'2\ndeep'
[[ -x results/make/plots/run.sh ]] && ok "tree: the exec file is executable" ||
  fail "tree: the exec file lost its execute bit"
expect_eq "tree: the consumer saw it whole, under in/" "$(cat results/list/o | tr '\n' ' ')" \
  ". ./empty ./p1.txt ./p2.txt ./p3.txt ./run.sh ./sub ./sub/deep ./sub/deep/d.txt hi "
run store verify --store "file://$T/p/.berth/store"
expect_eq "tree: store verify checks the manifest and every file" "$RC:$(tail -1 <<<"$OUT")" \
  "0:7 object(s) verified, 0 bad"

# Reruns: cached, then settled; a stray file is removed, an edited one restored.
run run pipeline.toml --format json
expect_eq "rerun: cached" "$(counts)" "0 2 0"
run run pipeline.toml --format json
expect_eq "rerun again: settled" "$(counts) $(settled)" "0 2 0 True"
touch results/make/plots/stray.txt
run run pipeline.toml --format json
expect_eq "stray file: not settled, nothing reran" "$(counts) $(settled)" "0 2 0 False"
[[ ! -e results/make/plots/stray.txt ]] && ok "stray file: removed with the result replaced whole" ||
  fail "stray file: still in the result"
chmod u+w results/make/plots/p1.txt 2>/dev/null || true
rm -f results/make/plots/p1.txt && echo edited >results/make/plots/p1.txt
run run pipeline.toml --format json
expect_eq "edited file: restored" "$RC $(cat results/make/plots/p1.txt)" "0 1"

# More files: the tree changes, and its reader reruns; the same tree again: cutoff.
run run pipeline.toml --config n=5 --format json
expect_eq "n=5: both reran" "$(counts)" "2 0 0"
expect_eq "n=5: five files" "$(ls results/make/plots/p*.txt | wc -l)" 5
sed -i 's/chmod +x {out.plots}\/run.sh"/chmod +x {out.plots}\/run.sh; true"/' pipeline.toml
run run pipeline.toml --format json
expect_eq "same tree from a changed command: its reader is not rerun" "$(counts)" "1 1 0"

# A directory output has no canonical form; a symlink inside one is refused by name;
# an output that is a directory but was not declared one says how to declare it.
mkdir -p "$T/q"
cd "$T/q"
cat >bad.toml <<'X'
[[step]]
name = "s"
run = "true"
outputs = ["plots/"]
canonical = { plots = "json" }
X
expect_bad_input "canonical on a directory output" \
  "bad.toml:5:23: step 's': canonical.plots: 'plots' is a directory output" run bad.toml
cat >link.toml <<'X'
[[step]]
name = "s"
run = "ln -s /etc/passwd {out.plots}/pw"
outputs = ["plots/"]
[[step]]
name = "t"
run = "mkdir {out.d}; touch {out.d}/x"
outputs = ["d"]
X
run run link.toml --format json
expect_eq "symlink: the step fails" "$RC" 1
expect_contains "symlink: named" "$(json "[s['reason'] for s in j['steps'] if s['name']=='s'][0]")" \
  "pw is a symlink"
expect_contains "undeclared directory: says to declare it" \
  "$(json "[s['reason'] for s in j['steps'] if s['name']=='t'][0]")" "declare it as \"d/\""

# Collection keeps every file of a tree a kept run reaches, and the rerun is cached.
cd "$T/p"
sleep 0.01; run store gc --keep-runs 1 --grace 1ms
expect_eq "gc: exit 0" "$RC" 0
run store verify --store "file://$T/p/.berth/store"
expect_eq "gc: what is left verifies" "$RC" 0
rm -rf results .berth/cache
run run pipeline.toml --format json
expect_eq "gc: the kept tree is still a cache hit, whole" \
  "$(counts) $(ls results/make/plots | wc -l)" "0 2 0 6"
finish
