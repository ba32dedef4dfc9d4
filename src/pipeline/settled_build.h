// Building a run's settled record (settled.h, spec 04 §7.1) from what its steps rested
// on: per step keyed in the run, the files and objects its outcome was verified at, and
// its fingerprint; per step reused from the last record, that record's entry, its facts
// mapped by index, each once. One stamp per path: a file two steps read is checked once,
// and the same path seen at two stamps changed during the run — then there is no record.
// The executor decides whether a run may leave one at all (every step cached or
// executed, no problem); this only builds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/key.h"
#include "pipeline/settled.h"

namespace berth::pipeline {

// What one step's cached or executed outcome rests on.
struct SettledFacts {
  std::vector<SettledFile> files;
  std::vector<std::string> objects;
};

struct SettledRun {
  const Graph* graph = nullptr;
  std::vector<SettledFacts>* facts = nullptr;         // per step keyed in the run; moved from
  std::vector<std::string>* fingerprints = nullptr;   // per step ("": not computed); moved from
  const std::vector<int64_t>* reused_from = nullptr;  // per step: the old entry, -1 for none
  const Settled* old = nullptr;                       // the record reused from, or null
  const ToolVersions* tools = nullptr;                // each tool's version, as read
};

// The record of `run`, or nullopt when a path was seen at two stamps or a tool's version
// was not read.
std::optional<Settled> build_settled(const SettledRun& run);

// The placement request a step makes, as a record keeps it: tasks, cpus per task, GPUs
// (a share of one counts as one: it needs a device to fit) and nodes (-1: any).
SettledRequest settled_request(const Step& s);

}  // namespace berth::pipeline
