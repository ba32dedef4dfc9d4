// This node's hardware topology as hwloc XML: what the wire-up hands MPI ranks so that
// each need not discover it again (spec 07 §2.2).
//
// Discovering the topology is a large part of an Open MPI rank's MPI_Init on a small
// node (measured: 16 ranks on 2 cores, 0.66 s without it, 0.55 s with it). The whole
// topology (caches and NUMA nodes included: ranks use them to decide what is local) is
// read once per process, the first time it is asked for, and kept.
#pragma once

#include <string>

#include "util/result.h"

namespace berth::topo {

// The XML (hwloc's v2 format), or why hwloc could not give it. Thread-safe; the first
// call reads the topology (milliseconds), later ones return the kept text.
Result<std::string> topology_xml();

}  // namespace berth::topo
