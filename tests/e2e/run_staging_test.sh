#!/usr/bin/env bash
# berth run's staging and publishing (spec 04 §7): every step starts in an empty
# staging directory even though directories are reused, a directory left by a process
# that is gone is removed, nothing is left behind, an output hard-linked to the user's
# input is copied into the store rather than adopted, a chain's dependents see their
# inputs though they start before the row above them is written, and a row that cannot
# be written costs the cache entry, not the step. Inputs are symlinked in, leaving
# their ctime alone, and an input replaced while its step runs fails the step.
. "$(dirname "$0")/common.sh"
mkdir -p "$T/p/data"
cd "$T/p"
printf 'mine\n' >data/src.txt
chmod 0644 data/src.txt

# Each step lists its working directory (before it writes its output), then leaves
# litter behind: a file, a directory holding a file, and an extra file in out/. On one
# core the steps run one after another in the same reused directory.
cat >pipeline.toml <<'X'
[[step]]
name = "s-{n}"
foreach = { n = [1, 2, 3, 4] }
run = "l=$(ls -A . in out | tr '\n' ' '); printf '%s' \"$l\" > {out.seen}; touch junk; mkdir -p d/e; touch d/e/f out/extra"
outputs = ["seen"]
env = { N = "{n}" }  # a key of its own per step (params are literal)

[[step]]
name = "linked"
inputs = { src = "data/src.txt" }
cmd = ["ln", "{in.src}", "{out.o}"]
outputs = ["o"]

[[step]]
name = "c-0"
inputs = { src = "data/src.txt" }
cmd = ["cp", "{in.src}", "{out.o}"]
outputs = ["o"]
[[step]]
name = "c-1"
inputs = { src = "@c-0/o" }
run = "cat {in.src} {in.src} > {out.o}"
outputs = ["o"]
[[step]]
name = "c-2"
inputs = { src = "@c-1/o" }
run = "cat {in.src} {in.src} > {out.o}"
outputs = ["o"]
X

# A staging directory named for a process that has exited: stale, to be swept.
dead=$(sh -c 'echo $$')
mkdir -p ".berth/cache/staging/$dead.0/in" ".berth/cache/staging/$dead.0/out"
touch ".berth/cache/staging/$dead.0/out/left"
# One that is not berth's naming is not touched.
mkdir -p .berth/cache/staging/keep-me

run run pipeline.toml --format json --host "localhost:1"
expect_eq "run: exit 0" "$RC" 0
expect_eq "run: all executed" "$(json "j['executed']")" 8
for n in 1 2 3 4; do
  # `ls -A . in out` of an empty stage: ". in out" headers and no other names.
  expect_eq "s-$n: started in an empty staging directory" \
    "$(tr -s ' ' <results/s-$n/seen)" ".: in out in: out: "
done
expect_eq "staging: the stale directory was swept" \
  "$(test -e ".berth/cache/staging/$dead.0" && echo present || echo gone)" gone
expect_eq "staging: nothing of this run is left" \
  "$(ls -A .berth/cache/staging | tr '\n' ' ')" "keep-me "

# The output that was a hard link to the user's file: stored as a copy, the user's
# file left writable and, edited, not changing the stored object.
obj=$(json "[s['outputs']['o']['object'] for s in j['steps'] if s['name']=='linked'][0]")
chain_obj=$(json "[s['outputs']['o']['object'] for s in j['steps'] if s['name']=='c-2'][0]")
hex=${obj#sha256:}
stored=.berth/store/objects/${hex:0:2}/${hex:2}
expect_eq "linked: not the user's inode" \
  "$([[ $(stat -c %i "$stored") != $(stat -c %i data/src.txt) ]] && echo copied)" copied
expect_eq "linked: the user's file keeps its mode" "$(stat -c %a data/src.txt)" 644
printf 'edited\n' >>data/src.txt
expect_eq "linked: the stored copy is unchanged" "$(cat "$stored")" mine
run store verify --store "file://$T/p/.berth/store"
expect_eq "linked: store verifies" "$RC" 0

# The chain's bytes: each step saw the one above it.
expect_eq "chain: c-2 holds four copies" "$(grep -c mine results/c-2/o)" 4
# An adopted output is stored read-only; its result is a read-only copy of its own
# (spec 04 §7.5), not the stored inode, so that editing it cannot change the object.
hex=${chain_obj#sha256:}
stored=.berth/store/objects/${hex:0:2}/${hex:2}
expect_eq "adopted: the result is a copy of its own" \
  "$([[ $(stat -c %i results/c-2/o) != $(stat -c %i "$stored") ]] && echo copy)" copy
expect_eq "adopted: both read-only" "$(stat -c %a results/c-2/o) $(stat -c %a "$stored")" \
  "444 444"

# Inputs are symlinked into staging, not linked: a run leaves their ctime alone, so
# that the next run takes their hash from the index instead of rehashing them.
mkdir -p "$T/c"
cd "$T/c"
printf 'in\n' >in.txt
ctime() { python3 -c 'import os,sys; print(os.stat(sys.argv[1]).st_ctime_ns)' "$1"; }
before=$(ctime in.txt)
cat >pipeline.toml <<'X'
[[step]]
name = "r"
inputs = { src = "in.txt" }
run = "test -L {in.src} && cat {in.src} > {out.o}"
outputs = ["o"]
X
run run pipeline.toml --format json
expect_eq "symlinked input: the step read it" "$RC:$(cat results/r/o)" "0:in"
expect_eq "symlinked input: its ctime is untouched" "$(ctime in.txt)" "$before"

# An input replaced by another process while its step runs: the step's outputs are
# not stored (its key names bytes it may not have read), the step fails saying so, and
# it runs again. (The step cannot replace it itself: it sees its inputs read-only.)
cat >pipeline.toml <<X
[[step]]
name = "r"
inputs = { src = "in.txt" }
run = "cat {in.src} > {out.o}; [ -e $T/c/once ] || (touch $T/c/started; while [ ! -e $T/c/once ]; do sleep 0.02; done)"
outputs = ["o"]
X
( for _ in $(seq 500); do [ -e started ] && break; sleep 0.02; done
  printf 'other\n' > new; mv new in.txt; touch once ) &
run run pipeline.toml --format json
wait
expect_eq "input replaced mid-step: exit 1" "$RC" 1
expect_contains "input replaced mid-step: said" \
  "$(json "[s['reason'] for s in j['steps'] if s['name']=='r'][0]")" \
  "input in.txt changed while the step ran"
run run pipeline.toml --format json
expect_eq "input replaced mid-step: runs again, on the new bytes" \
  "$RC $(json "j['executed']") $(cat results/r/o)" "0 1 other"

# A row that cannot be written (its directory is a file) after the step's outputs are
# stored: the step still counts as executed, its dependent (already started from the
# objects) runs, its results are materialised, and the report says what was lost.
mkdir -p "$T/r"
cd "$T/r"
printf 'x\n' >seed.txt
run store put --store "file://$T/r/.berth/store" seed.txt
mkdir -p .berth/store/rows/v1
touch .berth/store/rows/v1/steps
cat >pipeline.toml <<'X'
[[step]]
name = "a"
run = "echo a > {out.o}"
outputs = ["o"]
[[step]]
name = "b"
inputs = { x = "@a/o" }
run = "cat {in.x} {in.x} > {out.o}"
outputs = ["o"]
X
run run pipeline.toml --format json
expect_eq "rowless: exit 0" "$RC" 0
expect_eq "rowless: both executed" "$(json "[s['state'] for s in j['steps']]")" "['executed', 'executed']"
expect_contains "rowless: reported" "$(json "j['problems']")" "its row was not written"
expect_eq "rowless: results materialised" "$(cat results/b/o | tr '\n' ' ')" "a a "
run run pipeline.toml --format json
expect_eq "rowless: nothing was cached" "$(json "j['executed']")" 2
# A step cannot change its inputs (spec 04 §7.4): a write through the link to the
# user's file, through another name of it, or through an upstream output fails with
# "Read-only file system", and the original, the stored object and the upstream's
# result are unchanged. Each step then goes on to write its output without the write.
mkdir -p "$T/w"
cd "$T/w"
printf 'orig\n' >data.csv
cat >pipeline.toml <<X
[[step]]
name = "append"
inputs = { d = "data.csv" }
run = "(echo more >> {in.d}) 2> {out.err}; (: > $T/w/data.csv) 2>> {out.err}; cat {in.d} > {out.o}"
outputs = ["o", "err"]
[[step]]
name = "down"
inputs = { u = "@append/o" }
run = "(echo bad >> {in.u}) 2> {out.err}; cat {in.u} > {out.o}"
outputs = ["o", "err"]
X
run run pipeline.toml --format json
# Where the kernel allows no mount namespace (a chroot, a locked-down container), the
# run must say so, and the write that reached the user's file is caught after the step:
# it fails, storing nothing.
unprotected=$(json "' '.join(n for s in j['steps'] for n in s.get('notices', []) if 'not protected from writes' in n)")
if [[ -n $unprotected ]]; then
  expect_contains "read-only inputs: not here, and said why" "$unprotected" "does not let berth"
  expect_contains "read-only inputs: not here, the write caught after the step" \
    "$RC $(json "[s['reason'] for s in j['steps'] if s['name']=='append'][0]")" \
    "1 input data.csv changed while the step ran"
  finish
  exit 0
fi
expect_eq "read-only inputs: exit 0" "$RC" 0
expect_eq "read-only inputs: the user's file is unchanged" "$(cat data.csv)" "orig"
expect_eq "read-only inputs: the step read it" "$(cat results/append/o)" "orig"
expect_eq "read-only inputs: both writes to it failed" \
  "$(grep -c 'Read-only file system' results/append/err)" 2
expect_eq "read-only inputs: the upstream result is unchanged" "$(cat results/down/o)" "orig"
expect_contains "read-only inputs: the write to it failed" "$(cat results/down/err)" \
  "Read-only file system"
run store verify --store "file://$T/w/.berth/store"
expect_eq "read-only inputs: the store verifies" "$RC" 0
finish
