// Placements for steps that need no core of their own (no_core.h).
#include "pipeline/no_core.h"

#include <string>

#include "pipeline/fit_check.h"

namespace berth::pipeline {

Result<std::optional<place::Grant>> grant_for(place::Pool& pool, const Step& s) {
  if (!needs_no_core(s)) return pool.grant(request_of(s));
  place::Grant g;
  g.placement.notes.emplace_back(kNoCoreNotice);
  return std::optional<place::Grant>(std::move(g));
}

}  // namespace berth::pipeline
