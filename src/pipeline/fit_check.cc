// The fit check (fit_check.h).
#include "pipeline/fit_check.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <tuple>

#include "pipeline/no_core.h"

namespace berth::pipeline {

place::Request request_of(const Step& s) {
  place::Request r;
  r.tasks = s.tasks;
  r.cpus_per_task = std::max(1, s.cores / std::max(1, s.tasks));
  r.gpus = s.gpus;
  r.gpu_share = s.gpu_share;
  r.nodes = s.nodes;
  return r;
}

std::vector<NeverFits> never_fitting(const Graph& g, const std::vector<place::PoolNode>& nodes) {
  // One grant per distinct request: a 10,000-step fan-out has one shape.
  // tasks, cpus per task, gpus, share of one, nodes
  using Shape = std::tuple<int, int, int, int, int>;
  std::map<Shape, std::optional<std::string>> why;
  std::vector<NeverFits> out;
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const Step& s = g.steps[i];
    if (s.from_record || needs_no_core(s)) continue;  // a no-core step takes nothing
    place::Request r = request_of(s);
    Shape shape{r.tasks, r.cpus_per_task, r.gpus, r.gpu_share, r.nodes.value_or(-1)};
    auto it = why.find(shape);
    if (it == why.end()) {
      place::Pool empty(nodes);
      auto grant = empty.grant(r);
      std::optional<std::string> reason;
      if (!grant.ok()) reason = "can never run here: " + grant.error().message();
      it = why.emplace(shape, std::move(reason)).first;
    }
    if (it->second) out.push_back(NeverFits{i, *it->second});
  }
  return out;
}

}  // namespace berth::pipeline
