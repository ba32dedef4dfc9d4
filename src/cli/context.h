// The flags every placing command shares (`berth machine`, `berth place`, `berth run`)
// and the Context they build (place/context.h: the library's, which the Python module
// builds too).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "alloc/discover.h"
#include "place/context.h"
#include "place/launcher.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::cli {

// Flags that choose the allocation (shared with `berth alloc`): the library's options
// and --env-file.
struct AllocFlags : place::AllocationOptions {
  std::string env_file;
};
void add_alloc_flags(CLI::App& app, AllocFlags& f);

// Flags that choose the machine, the node reading and the launcher.
using MachineFlags = place::MachineOptions;
void add_machine_flags(CLI::App& app, MachineFlags& f);

// What every placing command works from (place/context.h).
using Context = place::Context;

// Reads the environment (or --env-file), discovers the allocation, chooses the
// machine, describes this node and detects the launcher. Errors name the input.
Result<Context> build_context(const AllocFlags& a, const MachineFlags& m);

// Env from --env-file, or the process's.
Result<Env> read_env(const std::string& env_file);

// berth's own environment, read from the process once (Env::from_process) for every
// command: what launches and probes run with, whatever --env-file says.
const Env& process_env();

// How commands ask a launcher or a tool for its version: a pipeline::CaptureProbe over
// process_env(), made on first use.
place::VersionProbe& version_probe();

}  // namespace berth::cli
