// CpuReader: what the kernel says about this node's CPUs, read one of two ways.
//
// A CpuReading is the raw material for usable core ids (cores.h): the hardware
// threads this process may run on, the threads the node has online, and for each
// thread the threads that share its physical core. It deliberately holds no policy —
// no reduction, no cap, no half rule — so that both readers are tested for reading
// alone and the policy is tested once, from tables.
//
// Two readers stand behind the one interface:
//   - SysfsCpuReader reads `sys/devices/system/cpu/...` under a root directory with an
//     explicit affinity list: `--sysfs-root DIR --affinity LIST`, and every test.
//   - HwlocCpuReader asks hwloc about this process on this node.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/result.h"

namespace berth::topo {

struct CpuReading {
  // Hardware-thread (OS) ids this process may run on, ascending.
  std::vector<int> allowed;
  // Every hardware thread the node has online, ascending; empty when unknown. Used
  // only when the affinity is not believed (cores.h).
  std::vector<int> online;
  // For a thread id, the ascending ids that share its physical core, itself
  // included. A thread without an entry had no topology files: it reads as a core of
  // its own, so a node without them reads as having no siblings — how every node was
  // read before sibling lists were.
  std::map<int, std::vector<int>> siblings;
  // Where the reading came from, for provenance ("hwloc 2.9.0",
  // "/sys/devices/system/cpu under /tmp/x, affinity from --affinity").
  std::string source;
  // Things worth telling the user that did not stop the reading.
  std::vector<std::string> diagnostics;
};

class CpuReader {
 public:
  virtual ~CpuReader() = default;
  // Fails when the node's CPUs cannot be read at all, or a topology file is
  // malformed; the message names the file and what was wrong.
  virtual Result<CpuReading> read() const = 0;
};

// Reads `<root>/sys/devices/system/cpu/online` and, for each thread id of interest,
// `cpu<N>/topology/core_cpus_list` (Linux >= 5.7), else the older
// `thread_siblings_list`, else nothing (no siblings).
class SysfsCpuReader : public CpuReader {
 public:
  // `affinity` stands in for this process's own affinity; absent, the process is taken
  // to be allowed every online CPU (a fake tree of a whole node).
  SysfsCpuReader(std::string root, std::optional<std::vector<int>> affinity)
      : root_(std::move(root)), affinity_(std::move(affinity)) {}
  Result<CpuReading> read() const override;

 private:
  std::string root_;
  std::optional<std::vector<int>> affinity_;
};

// Reads this process's binding (hwloc_get_cpubind) and the node's cores (hwloc core
// objects, with disallowed PUs included so that siblings outside the binding are
// still seen as siblings). Read once per process: every later read() returns the first.
class HwlocCpuReader : public CpuReader {
 public:
  Result<CpuReading> read() const override;

  // hwloc loads every plugin it has (PCI, OpenCL, GL displays through libX11, an XML
  // reader through libxml2) when a process makes its first topology, whatever that
  // topology then filters out: 1.6 ms of each run's start on the development VM, for
  // objects this reading never keeps. hwloc is told to leave them out only through the
  // environment: this is the variable and value that do it (HWLOC_PLUGINS_BLACKLIST),
  // for main to set for berth alone (Env::set_for_berth_only) before any thread; nullopt
  // where `env` (the process's) sets one of hwloc's plugin or component variables: the
  // user's choice stands.
  static std::optional<std::pair<std::string, std::string>> unused_plugins(const Env& env);
};

}  // namespace berth::topo
