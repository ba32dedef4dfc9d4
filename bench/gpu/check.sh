#!/usr/bin/env bash
# bench/gpu/check.sh [BUNDLE] — what each step and rank really sees on a GPU node.
#
# Builds nothing: it takes a berth bundled with the libraries it loads — BUNDLE/berth
# and BUNDLE/lib/*.so, a build's berth and what `ldd` and its run-time loads name,
# glibc left out (default BUNDLE build/gpu-bundle) — and runs, on this node:
#   1. berth machine (text and JSON): each GPU, its UUID, model, bus, cores;
#   2. a pipeline of as many one-GPU steps as the node has GPUs, plus two gpus = 0 steps
#      and two gpus = 0.5 steps, all at once; each step records what it was given
#      (CUDA_VISIBLE_DEVICES) and what it sees: `nvidia-smi -L` and, where PyTorch is
#      installed, torch.cuda.device_count() and the UUID of its device 0 — then the
#      report's notices (shares, the NVML GPU check);
#   3. berth launch -n R --gpus-per-rank 1 with R the GPU count, each rank printing its
#      core, its CUDA_VISIBLE_DEVICES and nvidia-smi -L as it sees it.
# It prints a table; a line marked MISMATCH is a finding. Not a pass/fail test: the
# numbers and names mean something only on a real GPU node.
set -uo pipefail
B=${1:-build/gpu-bundle}
BERTH=$B/berth
[ -x "$BERTH" ] || { echo "check.sh: no berth at $BERTH (make a bundle first)"; exit 2; }
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
W=$(mktemp -d /tmp/berth-gpu-check.XXXXXX)
trap 'rm -rf "$W"' EXIT

echo "== berth machine"
"$BERTH" machine || echo "berth machine: failed ($?)"
"$BERTH" machine --format json >"$W/machine.json" || true
n=$(python3 -c "import json; print(json.load(open('$W/machine.json'))['gpus']['count'])" 2>/dev/null || echo 0)
echo "GPUs usable here: $n"
if [ "$n" = 0 ]; then echo "no GPU: nothing more to check"; exit 0; fi

probe='echo "given=[${{CUDA_VISIBLE_DEVICES-unset}}]"; nvidia-smi -L 2>&1 | sed "s/^/smi: /"; python3 -c "import torch; c = torch.cuda.device_count(); print(\"torch.count=%d\" % c); print(\"torch.uuid0=%s\" % (torch.cuda.get_device_properties(0).uuid if c else \"-\"))" 2>/dev/null || echo "torch: not installed"'
mkdir -p "$W/p" && cd "$W/p"
{
  printf '[[step]]\nname = "g-{i}"\nforeach = { i = [%s] }\ngpus = 1\n' "$(seq -s, 0 $((n - 1)))"
  printf 'run = %s\noutputs = ["o"]\n\n' "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1] + "; sleep 2) > {out.o}"))' "($probe")"
  printf '[[step]]\nname = "cpu-{i}"\nforeach = { i = [0, 1] }\ngpus = 0\n'
  printf 'run = %s\noutputs = ["o"]\n\n' "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1] + ") > {out.o}"))' "($probe")"
  printf '[[step]]\nname = "half-{i}"\nforeach = { i = [0, 1] }\ngpus = 0.5\n'
  printf 'run = %s\noutputs = ["o"]\n' "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1] + "; sleep 2) > {out.o}"))' "($probe")"
} >pipeline.toml
echo "== pipeline: $n one-GPU steps, two gpus = 0, two gpus = 0.5"
start=$(date +%s.%N)
"$BERTH" run pipeline.toml --format json >"$W/run.json"; rc=$?
echo "berth run: exit $rc, $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s"
for f in results/*/o; do
  step=$(basename "$(dirname "$f")")
  given=$(sed -n 's/^given=//p' "$f")
  seen=$(grep -c '^smi: GPU' "$f")
  torch=$(sed -n 's/^torch.count=//p' "$f")
  mark=""
  case $step in
    g-*|half-*) [ "$seen" = 1 ] || mark=MISMATCH ;;
    cpu-*) [ "$given" = "[]" ] && [ "${torch:-0}" = 0 ] || mark=MISMATCH ;;
  esac
  printf '%-10s given %-12s nvidia-smi sees %s  torch sees %s %s\n' "$step" "$given" "$seen" "${torch:-n/a}" "$mark"
done
echo "distinct devices among g-*: $(cat results/g-*/o | sed -n 's/^given=//p' | sort -u | wc -l) of $n (all at once only where the node has a core for each step)"
python3 - "$W/run.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for s in j.get("steps", []):
    for n in s.get("notices", []):
        print("notice %-8s %s" % (s["name"], n))
PY

echo "== berth launch -n $n --gpus-per-rank 1"
"$BERTH" launch -n "$n" --gpus-per-rank 1 -- sh -c 'echo "rank=$BERTH_RANK cpus=$BERTH_CPUS given=$CUDA_VISIBLE_DEVICES sees=$(nvidia-smi -L 2>/dev/null | wc -l)"' | sort
echo "launch: exit ${PIPESTATUS[0]}"
