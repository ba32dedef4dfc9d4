#!/usr/bin/env bash
# What staging a large input costs a step (spec 04 §7, step 3): the same one-step
# pipeline with a 1 KiB and a 1 GiB input, its input already hashed (a rerun with a
# changed parameter, so that the step runs again and the input's hash comes from the
# index), side by side with what copying the 1 GiB file costs. Staging links the file
# and makes it read-only in the step's own mount namespace: no byte is copied, so the
# two runs should take the same time, and far less than the copy.
#
#   bench/staging/run.sh [BUILD_DIR]      (default build/release; needs its berth)
set -euo pipefail
build=${1:-build/release}
berth=$(cd "$build" && pwd)/berth
[ -x "$berth" ] || { echo "no berth at $berth: build the release preset first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-staging.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
head -c 1024 /dev/urandom >small.bin
# 1 GiB of random bytes (not zeros: a filesystem might store those sparsely).
head -c $((1 << 30)) /dev/urandom >big.bin

# The median of three runs of `berth run` of pipeline-$1.toml, each with a new
# parameter value, in seconds.
time_runs() {
  local which=$1 times=() t0 t1
  for i in 0 1 2 3; do
    cat >"pipeline-$which.toml" <<X
[[step]]
name = "read"
inputs = { f = "$which.bin" }
params = { round = $i }
run = "wc -c < {in.f} > {out.o}"
outputs = ["o"]
X
    t0=$(date +%s.%N)
    "$berth" run "pipeline-$which.toml" --no-step-output >/dev/null 2>&1 ||
      { echo "staging $which: berth run failed" >&2; exit 1; }
    t1=$(date +%s.%N)
    # Round 0 hashes the input: not staging, not counted.
    [ "$i" -gt 0 ] && times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

small=$(time_runs small)
big=$(time_runs big)
sync
t0=$(date +%s.%N)
cp big.bin copy.bin
sync copy.bin
t1=$(date +%s.%N)
copy=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
rm -f copy.bin
printf '%-44s %8.3f s\n' "run, 1 KiB input (staged, read-only)" "$small"
printf '%-44s %8.3f s\n' "run, 1 GiB input (staged, read-only)" "$big"
printf '%-44s %8.3f s\n' "cp of the 1 GiB input (what a copy costs)" "$copy"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }
printf '%-44s %8.2fx\n' "1 GiB run / 1 KiB run" "$(ratio "$big" "$small")"
printf '%-44s %8.2fx\n' "cp / 1 GiB run" "$(ratio "$copy" "$big")"
