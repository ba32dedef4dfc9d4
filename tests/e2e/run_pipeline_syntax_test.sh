#!/usr/bin/env bash
# What a pipeline file can say, and never a silently wrong result: a sweep whose params
# hold its foreach key is expanded (never one key for all), floats are one value each,
# combinations can be written out; a step that can never fit is refused while the rest
# runs; and every mistake is an error at its key, with what to write instead.
. "$(dirname "$0")/common.sh"
cd "$T"
states() { json "' '.join(s['name'] + '=' + s['state'] for s in j['steps'])"; }

# The collapsed sweep: {lr} in params is each step's own value, and its own key.
cat >sweep.toml <<'TOML'
[[step]]
name = "sim-{lr}"
foreach = { lr = ["0.1", "0.01"] }
params = { rate = "{lr}" }
run = "echo {param.rate} > {out.o}"
outputs = ["o"]
TOML
run run sweep.toml --format json
expect_eq "sweep: both simulations ran" "$(states)" "sim-0.1=executed sim-0.01=executed"
expect_eq "sweep: sim-0.1 has its own rate" "$(cat results-sweep/sim-0.1/o)" "0.1"
expect_eq "sweep: sim-0.01 has its own rate" "$(cat results-sweep/sim-0.01/o)" "0.01"
expect_eq "sweep: two keys" "$(json "len({s['key'] for s in j['steps']})")" 2

# Floats and booleans are values, one text each; combinations written out are one step
# each.
cat >values.toml <<'TOML'
[[step]]
name = "g-{lr}-{on}"
foreach = { lr = [0.10, 1e-3], on = [true] }
run = "echo {lr} > {out.o}"
outputs = ["o"]

[[step]]
name = "z-{a}-{b}"
foreach = [{ a = 1, b = "x" }, { a = 2, b = "y" }]
run = "echo {a}{b} > {out.o}"
outputs = ["o"]
TOML
run run values.toml --format json
expect_eq "values: floats in their shortest text, pairs as written" "$(states)" \
  "g-0.1-true=executed g-0.001-true=executed z-1-x=executed z-2-y=executed"

# Refused, not stopped: the GPU step is refused with its reason, what reads from it is
# skipped, the rest runs, and the exit status says the run was not complete.
cat >gpu.toml <<'TOML'
[[step]]
name = "train"
gpus = 4096
run = "echo model > {out.m}"
outputs = ["m"]

[[step]]
name = "evaluate"
inputs = { m = "@train/m" }
run = "cat {in.m} > {out.r}"
outputs = ["r"]

[[step]]
name = "prepare"
run = "echo ok > {out.o}"
outputs = ["o"]
TOML
run run gpu.toml --format json
expect_eq "refused: exit 1" "$RC" 1
expect_eq "refused: states" "$(states)" "train=refused evaluate=skipped prepare=executed"
expect_contains "refused: the reason" "$(json "j['steps'][0]['reason']")" "can never run here"
expect_eq "refused: the rest ran" "$(cat results-gpu/prepare/o)" "ok"

# Names and shapes: outputs named like files, inputs staged under their own names, so
# that a program going by the extension accepts them.
printf 'id,v\n1,2\n' >table.csv
cat >names.toml <<'TOML'
[[step]]
name = "pack"
inputs = { t = "table.csv" }
run = "gzip -c {in.t} > {out.table.csv.gz}; basename {in.t} > {out.name.txt}"
outputs = ["table.csv.gz", "name.txt"]

[[step]]
name = "unpack"
inputs = { z = "@pack/table.csv.gz" }
run = "gunzip -c {in.z} > {out.table.csv}"
outputs = ["table.csv"]
TOML
run run names.toml --format json
expect_eq "names: both ran" "$(states)" "pack=executed unpack=executed"
expect_eq "names: the file input kept its name" "$(cat results-names/pack/name.txt)" "table.csv"
expect_eq "names: gunzip took the upstream output by its .gz name" "$(cat results-names/unpack/table.csv)" \
  "$(cat table.csv)"
[[ -f results-names/pack/table.csv.gz ]] && ok "names: a dotted output is materialised by its name" ||
  fail "names: results-names/pack holds $(ls results-names/pack)"

# A command: canonicaliser's script beside the pipeline is found, and keyed.
mkdir -p scripts
printf 'sort\n' >scripts/canon.sh
cat >canon.toml <<'TOML'
[[step]]
name = "c"
run = "printf 'b\\na\\n' > {out.o}"
outputs = ["o"]
canonical = { o = "command:sh scripts/canon.sh" }
TOML
run run canon.toml --format json
expect_eq "canonicaliser script: the step executed" "$(states)" "c=executed"
printf 'sort -r\n' >scripts/canon.sh
run run canon.toml --dry-run
expect_contains "canonicaliser script: an edit reruns the step" "$OUT" \
  "would-run c: input './scripts/canon.sh' changed (scripts/canon.sh)"

# Files a step leaves beside its outputs are named in a notice, not dropped silently.
cat >extra.toml <<'TOML'
[[step]]
name = "plot"
run = "echo t > {out.table}; echo png > plot.png; echo x > out/extra.csv"
outputs = ["table"]
TOML
run run extra.toml --format json
expect_eq "leftovers: the step executed" "$(states)" "plot=executed"
expect_eq "leftovers: named in the step's notice" "$(json "j['steps'][0]['notices'][0]")" \
  "left 2 file(s) it did not declare as outputs, removed with its staging directory: out/extra.csv, plot.png (name one in \`outputs\` to keep it)"
expect_contains "leftovers: and on the run's line" "$(json "j['notices']")" "1 step(s) have notices; plot: left 2 file(s)"

# Every missing input file at once.
printf '[[step]]\nname = "c-{s}"\nforeach = { s = ["a", "b"] }\ninputs = { t = "data/{s}.txt" }\nrun = "cat {in.t}"\n' >miss.toml
expect_bad_input "every missing input at once" \
  "2 input files do not exist: miss.toml:4:16: step 'c-{s}' ('c-a'): inputs.t: input file data/a.txt does not exist; miss.toml:4:16: step 'c-{s}' ('c-b'): inputs.t: input file data/b.txt does not exist" \
  run miss.toml

# A cycle, in the direction data flows.
printf '[[step]]\nname = "a"\ninputs = { x = "@b/o" }\nrun = "x"\noutputs = ["o"]\n[[step]]\nname = "b"\ninputs = { x = "@a/o" }\nrun = "x"\noutputs = ["o"]\n' >cycle.toml
expect_bad_input "a cycle, as data flows" \
  "cycle.toml: cycle: a -> b -> a (data flows left to right: each step's output is read by the next)" \
  run cycle.toml

# Errors a user can act on, each at its key.
bad() {  # bad NAME NEEDLE TOML
  printf '%s\n' "$3" >bad.toml
  expect_bad_input "$1" "$2" run bad.toml
}
bad "shell braces: how to write them" \
  "bad.toml:3:7: step 'x': run: placeholder {print \$1} names nothing here (braces that are not a placeholder, as in a shell or awk script, are written {{ and }})" \
  $'[[step]]\nname = "x"\nrun = "awk \'{print $1}\' f"'
bad "a param naming nothing, at its key" "bad.toml:4:16: step 'x': params.p: placeholder {nope} names nothing" \
  $'[[step]]\nname = "x"\nrun = "true"\nparams = { p = "{nope}" }'
bad "a placeholder with a close name" "placeholder {samle} names nothing here (did you mean 'sample'?)" \
  $'[[step]]\nname = "x-{sample}"\nforeach = { sample = ["a"] }\nrun = "echo {samle}"'
bad "a misspelt key" "bad.toml:3:6: step 'x': rn: unknown key (did you mean 'run'?)" \
  $'[[step]]\nname = "x"\nrn = "true"'
bad "a misspelt reference" "names no step 'prepar' (did you mean 'prepare'?)" \
  $'[[step]]\nname = "prepare"\nrun = "true"\noutputs = ["o"]\n[[step]]\nname = "x"\ninputs = { a = "@prepar/o" }\nrun = "true"'
bad "a fan-in matching nothing" "bad.toml:8:16: step 'x': inputs.a: '@b-*/o' matches no step" \
  $'[[step]]\nname = "a-{i}"\nforeach = { i = [1, 2] }\nrun = "true"\noutputs = ["o"]\n[[step]]\nname = "x"\ninputs = { a = "@b-*/o" }\nrun = "true"'
bad "combinations with other keys" "foreach[1].b: foreach[0] has no key 'b'" \
  $'[[step]]\nname = "x-{a}"\nforeach = [{ a = 1 }, { a = 2, b = 3 }]\nrun = "true"'
bad "a default a step cannot take" "defaults.name: unknown key (a step's own; not one [defaults] can give)" \
  $'[defaults]\nname = "x"\n[[step]]\nname = "x"\nrun = "true"'
bad "a pipeline name with a brace" "pipeline.name: holds a brace" \
  $'[pipeline]\nname = "p-{x}"\n[[step]]\nname = "x"\nrun = "true"'
bad "a config placeholder naming nothing" "placeholder {config.threds} names nothing here (did you mean 'config.threads'?)" \
  $'[config]\nthreads = 2\n[[step]]\nname = "x"\nrun = "echo {config.threds}"'
printf 'a,b\n1,2\n3\n' >rows.csv
bad "a table file's short row, at its line" "rows.csv:3:1: a row of 1 field(s); the header has 2 (a,b)" \
  $'[[step]]\nname = "x-{a}-{b}"\nforeach = "rows.csv"\nrun = "true"'
expect_bad_input "a target with a close name" "no step is named 'prepar' (did you mean 'prepare'?)" \
  run gpu.toml prepar
finish
