// The host berth runs on: its names and its usable cores.
#pragma once

#include "alloc/source.h"

namespace berth::cli {

// Reads gethostname() and, with hwloc, the number of physical cores that intersect
// this process's CPU affinity (a core counts once however many of its hardware
// threads are allowed). Falls back to sched_getaffinity's CPU count when hwloc fails.
// Computed once per process: the topology is loaded once, not per caller.
alloc::LocalHost local_host();

}  // namespace berth::cli
