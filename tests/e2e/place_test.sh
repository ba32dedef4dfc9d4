#!/usr/bin/env bash
# berth place: renderings for each launcher against golden lines, the JSON shape,
# refusals, and a real local launch bound to its core set.
. "$(dirname "$0")/common.sh"
cat >"$T/slurm.env" <<'X'
PATH=/usr/bin:/bin
SLURM_JOB_ID=9
SLURM_JOB_NODELIST=nid[001-004]
SLURM_TASKS_PER_NODE=128(x4)
X
cat >"$T/pbs_nodes" <<'X'
x1
x2
X
printf 'PATH=/usr/bin:/bin\nPBS_JOBID=3.pbs\nPBS_NODEFILE=%s\n' "$T/pbs_nodes" >"$T/pbs.env"

# render NAME ARGS...: berth place ... --format shell, one line per case into $T/lines,
# then what it says on stderr of what the launch does not do, a line per note.
: >"$T/lines"
render() {
  local name=$1; shift
  run place "$@" -- ./a.out arg
  local errors notes
  errors=$(grep -v '^berth: note: ' <<<"$ERR" || true)
  notes=$(grep '^berth: note: ' <<<"$ERR" | sed 's/^berth: /  /' || true)
  printf '%s: %s\n' "$name" "$OUT${errors:+ ERROR $errors}" >>"$T/lines"
  if [[ -n $notes ]]; then printf '%s\n' "$notes" >>"$T/lines"; fi
}
S=(--env-file "$T/slurm.env")
render "pm-cpu 25.11 one node" --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 4 --nodes nid001 --cores 0-3
render "pm-cpu 25.11 two nodes cap" --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 4 -c 2 --nodes nid001,nid002 --cores 0-3 --memory-cap 2048
render "pm-gpu 25.11 gpus" --machine pm-gpu --slurm-version 25.11 "${S[@]}" -n 1 --nodes nid003 --cores 0-15 --gpus 1
render "pm-cpu 25.11 unplaced" --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 8
render "chrysalis 20.02 masks" --machine chrysalis --slurm-version 20.02 "${S[@]}" -n 2 -c 2 --nodes nid001 --cores 1,2,5,6
render "chrysalis 20.02 cap dropped" --machine chrysalis --slurm-version 20.02 "${S[@]}" -n 1 --nodes nid001 --cores 0 --memory-cap 100
run place --machine polaris --env-file "$T/pbs.env" -n 2 --nodes x1,x2 --cores 0 --gpu-ids 0 -- ./a.out
expect_contains "pals: no PALS mpiexec here refuses placement" "$ERR" "placement refused"
OUT=$(cat "$T/lines")
expect_golden "renderings" place_renderings.txt

# Refusals name the problem.
expect_bad_input "node outside the allocation" "node 'nid009' is not in the slurm allocation" \
  place --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 1 --nodes nid009 -- true
expect_bad_input "core not usable" "core 999 is not usable" \
  place --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 1 --nodes nid001 --cores 999 -- true
expect_bad_input "old slurm refuses GPUs" "cannot confine GPUs" \
  place --machine chrysalis --slurm-version 20.02 "${S[@]}" -n 1 --nodes nid001 --cores 0 --gpus 1 -- true
expect_bad_input "too many tasks" "do not fit" \
  place --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 3 --nodes nid001 --cores 0-1 -- true
expect_bad_input "no command" "no command" place -n 1 --env-file /dev/null

# JSON: the pinned fields.
run place --format json --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 2 --nodes nid001 --cores 4-5 --memory-cap 512 -- ./a.out
expect_eq "json: mechanism" "$(json "j['mechanism']")" scheduler-enforced
expect_eq "json: memory cap enforced" "$(json "j['memory_cap']")" enforced
expect_eq "json: placement cores" "$(json "j['placement']['cores']")" "['4-5']"
expect_eq "json: gpus explicit none" "$(json "j['placement']['gpus']")" 0
expect_eq "json: argv ends with the command" "$(json "j['argv'][-1]")" ./a.out
run place --format json --machine chrysalis --slurm-version 20.02 "${S[@]}" -n 1 --nodes nid001 --cores 0 --memory-cap 512 -- ./a.out
expect_eq "json: cap not enforced on 20.02" "$(json "j['memory_cap']")" not-enforced
expect_eq "json: no --mem rendered" "$(json "any(a.startswith('--mem') for a in j['argv'])")" False
run place --format json --machine pm-cpu --slurm-version 25.11 "${S[@]}" -n 2 -- ./a.out
expect_eq "json: no placement" "$(json "j['placement']")" None
expect_eq "json: no placement, mechanism none" "$(json "j['mechanism']")" none

# A real local launch, bound to one core, sees only that core.
echo "PATH=/usr/bin:/bin" >"$T/empty.env"
last=$(python3 -c "import os; print(max(os.sched_getaffinity(0)))")
run place -n 1 --cores "$last" --run --env-file "$T/empty.env" -- grep Cpus_allowed_list /proc/self/status
expect_eq "local --run: exit 0" "$RC" 0
expect_eq "local --run: bound to core $last" "$(printf '%s' "$OUT" | cut -f2)" "$last"
run place -n 1 --cores "$last" --run --env-file "$T/empty.env" -- sh -c 'exit 3'
expect_eq "local --run: exit code passed through" "$RC" 3
finish
