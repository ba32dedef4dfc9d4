#!/usr/bin/env bash
# berth machine: the shipped descriptions, usable core ids read from a fake sysfs
# tree of Aurora (cores 0 and 52 held back, siblings c and c+104), and the support
# reports for each launcher era.
. "$(dirname "$0")/common.sh"
echo "PATH=/usr/bin:/bin" >"$T/empty.env"

# A fake Aurora node: 208 hardware threads, thread c and c+104 share a core.
R=$T/aurora
for c in $(seq 0 207); do
  d=$R/sys/devices/system/cpu/cpu$c/topology; mkdir -p "$d"
  echo "$((c % 104)),$((c % 104 + 104))" >"$d/thread_siblings_list"
done
echo "0-207" >"$R/sys/devices/system/cpu/online"
aff="1-51,53-103,105-155,157-207"

run machine --format json --machine aurora --sysfs-root "$R" --affinity "$aff" --env-file "$T/empty.env"
expect_eq "aurora: exit 0" "$RC" 0
expect_eq "aurora: usable core ids skip 0 and 52" "$(json "j['usable_core_list']")" "1-51,53-103"
expect_eq "aurora: 102 cores configured" "$(json "j['cores_per_node']")" 102
expect_eq "aurora: two threads per core" "$(json "j['threads_per_core']")" 2
expect_eq "aurora: memory from the description" "$(json "j['memory_per_node_mb']")" 960000
expect_contains "aurora: memory provenance says estimate" "$(json "j['memory_provenance']")" "estimate"
expect_eq "aurora: launcher kind" "$(json "j['launcher']['kind']")" pals-mpiexec

# Fewer than half of the configured cores is not believed.
run machine --format json --machine aurora --sysfs-root "$R" --affinity "1-10" --env-file "$T/empty.env"
expect_eq "half rule: falls back to the node" "$(json "j['core_basis']")" node-online
expect_contains "half rule: reported" "$(json "' '.join(j['diagnostics'])")" "half"

# The launcher era decides what placement gets; --slurm-version stands in for srun.
run machine --format json --machine chrysalis --slurm-version 20.02 --env-file "$T/empty.env"
expect_eq "slurm 20.02: cpu-binding" "$(json "j['placement_support']")" cpu-binding
expect_eq "slurm 20.02: cap not enforced" "$(json "j['memory_cap_support']")" none
run machine --format json --machine pm-cpu --slurm-version 25.11 --env-file "$T/empty.env"
expect_eq "slurm 25.11: scheduler-enforced" "$(json "j['placement_support']")" scheduler-enforced
expect_eq "slurm 25.11: cap enforced" "$(json "j['memory_cap_support']")" enforced

# An srun that is not there: placement support is none, with the reason.
printf 'PATH=/nonexistent\n' >"$T/nopath.env"
run machine --format json --machine pm-cpu --env-file "$T/nopath.env"
expect_eq "no srun: exit 0 (describing is not placing)" "$RC" 0

# Every shipped description is known by name.
for m in aurora chicoma-cpu chrysalis compy dane frontier generic pm-cpu pm-gpu polaris; do
  run machine --format json --machine "$m" --slurm-version 22.05 --launcher srun --env-file "$T/empty.env"
  expect_eq "machine $m: described" "$(json "j['machine']")" "$m"
done
expect_bad_input "unknown machine refused" "nosuch" machine --machine nosuch --env-file "$T/empty.env"
finish
