#!/usr/bin/env python3
"""Eight placed launches at once from one pool, then a pipeline: a Python driver inside
an allocation (docs/python.md). Run it inside one, e.g.

    salloc -N4 -n8 python3 examples/python/placed_launches.py examples/quickstart/pipeline.toml
"""
import sys
from concurrent.futures import ThreadPoolExecutor

import berth

# Each launch says where it ran, on which CPUs (read from inside), and when.
PROBE = ["sh", "-c", "s=$(date +%s.%N); sleep 2; echo \"${SLURMD_NODENAME:-$(hostname -s)}"
         " $(grep Cpus_allowed_list /proc/self/status | cut -f2) $s $(date +%s.%N)\""]

pool = berth.Pool()  # the allocation berth discovered, with this node's usable cores
print(f"{len(pool.nodes)} node(s), placement {berth.machine().placement_support}")


def launch(i):
    # Waits (the GIL released) until a core is free; holds it while the launch runs.
    with pool.grant(ntasks=1, cpus_per_task=1, wait=True) as placement:
        cmd = berth.parallel_command(1, placement=placement, command=PROBE)
        done = cmd.run(capture_output=True, text=True, check=True)
        return placement, cmd.mechanism, done.stdout.strip()


with ThreadPoolExecutor(max_workers=8) as threads:
    for i, (placement, mechanism, seen) in enumerate(threads.map(launch, range(8))):
        print(f"launch {i} on {placement.nodes[0]} core {placement.cores[0]} ({mechanism}): "
              f"{seen}")

# The same driver runs a pipeline: every step placed by berth's own pool, every result
# through the store; only what changed runs again.
if len(sys.argv) > 1:
    report = berth.run(sys.argv[1])
    print(f"pipeline {report.pipeline}: {report.executed} executed, {report.cached} cached")
