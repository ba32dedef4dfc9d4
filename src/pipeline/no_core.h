// Steps that need no core of their own (spec 04 §2.3, `cores = 0`): I/O-bound work —
// a download, a copy, a wait on a remote service — of which a run may hold more at once
// than it has cores. Such a step takes nothing from the pool: it runs as one task on
// the node berth runs on, bound to no core, beside the steps that hold cores, and the
// kernel shares the node's CPUs among them all. It still counts against `-j`, which
// caps the steps in flight whatever they hold.
#pragma once

#include <optional>
#include <string_view>

#include "pipeline/graph.h"
#include "place/pool.h"
#include "util/result.h"

namespace berth::pipeline {

// What a no-core step's report entry says, among its notices.
inline constexpr std::string_view kNoCoreNotice =
    "cores = 0: it took no core from the pool and was bound to none";

// True when step `s` asked for no core of its own (cores = 0).
inline bool needs_no_core(const Step& s) { return s.cores == 0; }

// A placement for step `s`: for a no-core step at once, holding nothing (grant id 0,
// which release() ignores; no node, which runs it here; no cores, which binds it to
// none; kNoCoreNotice in its notes); for any other, the pool's answer to its request
// (Pool::grant: nullopt for "not now", kRefused for never).
Result<std::optional<place::Grant>> grant_for(place::Pool& pool, const Step& s);

}  // namespace berth::pipeline
