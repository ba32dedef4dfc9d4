// Expansion of a PipelineFile into a Graph (spec 04 §3).
#include "pipeline/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

std::string where(const PipelineFile& pf, SourcePos p) {
  return p.line ? fmt::format("{}:{}:{}", pf.path, p.line, p.column) : pf.path;
}

// "p.toml:9:1: step 'count-{sample}'", plus " ('count-a')" once the name is expanded
// and differs from its template.
std::string origin_of(const PipelineFile& pf, const StepSpec& s, const std::string& expanded) {
  std::string o = fmt::format("{}: step '{}'", where(pf, s.pos), str::printable(s.name));
  if (!expanded.empty() && expanded != s.name) {
    o += fmt::format(" ('{}')", str::printable(expanded));
  }
  return o;
}

Failure step_error(const std::string& origin, std::string_view key, const Error& e) {
  return fail(e.code(), fmt::format("{}: {}: {}", origin, key, e.message()));
}

// The number of foreach combinations, or nullopt past kMaxExpandedSteps.
std::optional<size_t> combinations(const StepSpec& s) {
  size_t n = 1;
  for (const auto& [k, values] : s.foreach) {
    if (values.size() > kMaxExpandedSteps / n) return std::nullopt;
    n *= values.size();
  }
  return n;
}

// The foreach bindings of combination `i`: keys sorted, the first key varying slowest
// and each key's values in the order given (spec 04 §3.1).
std::map<std::string, std::string> bindings_of(const StepSpec& s, size_t i) {
  std::map<std::string, std::string> b;
  for (auto it = s.foreach.rbegin(); it != s.foreach.rend(); ++it) {
    const auto& values = it->second;
    b.emplace(it->first, values[i % values.size()]);
    i /= values.size();
  }
  return b;
}

std::string join_path(const std::string& dir, const std::string& p) {
  if (!p.empty() && p.front() == '/') return p;
  if (dir == ".") return p;
  if (!dir.empty() && dir.back() == '/') return dir + p;
  return dir + "/" + p;
}

// An unresolved "@step/output" reference, remembered until every name is known.
struct PendingRef {
  size_t step;  // index in expansion order
  std::string input;
  size_t item;
};

Result<Step> expand_one(const PipelineFile& pf, const StepSpec& s,
                        std::map<std::string, std::string> bindings, const FileExists& exists,
                        std::vector<std::pair<std::string, size_t>>& refs) {
  Step st;
  st.spec = s.index;
  st.bindings = std::move(bindings);
  Scope names;
  names.bindings = &st.bindings;
  const std::string tmpl_origin = origin_of(pf, s, "");
  {
    auto name = expand_plain(s.name, names);
    if (!name.ok()) return step_error(tmpl_origin, "name", name.error());
    st.name = std::move(*name);
  }
  st.origin = origin_of(pf, s, st.name);
  if (auto problem = step_name_problem(st.name)) {
    return fail(Errc::kInvalidInput, fmt::format("{}: name: {}", st.origin, *problem));
  }
  st.params = s.params;
  st.outputs = s.outputs;
  for (const std::string& o : st.outputs) {
    auto it = s.canonical.find(o);
    st.canonical[o] = it == s.canonical.end() ? "bytes" : it->second;
  }
  st.tools = s.tools;
  std::sort(st.tools.begin(), st.tools.end());
  st.cores = s.cores;
  st.gpus = s.gpus;
  st.tasks = s.tasks;
  st.nodes = s.nodes;
  st.memory_cap_mb = s.memory_cap_mb;
  st.mpi = s.mpi;

  // Input paths may use foreach keys and params; never resources or other paths.
  Scope paths = names;
  paths.params = &st.params;
  std::set<std::string> input_names;
  for (const auto& [name, spec] : s.inputs) {
    Input in;
    in.name = name;
    in.is_list = spec.is_list;
    std::string key = "inputs." + name;
    for (const std::string& v : spec.values) {
      auto text = expand_plain(v, paths);
      if (!text.ok()) return step_error(st.origin, key, text.error());
      InputItem item;
      item.text = std::move(*text);
      if (item.text.empty()) {
        return fail(Errc::kInvalidInput, fmt::format("{}: {}: '{}' expands to an empty path",
                                                     st.origin, key, str::printable(v)));
      }
      if (item.text.front() == '@') {
        item.kind = InputItem::Kind::kStepOutput;
        refs.emplace_back(name, in.items.size());
      } else {
        item.kind = InputItem::Kind::kFile;
        item.path = join_path(pf.dir, item.text);
        // Checked now, so that a typo fails the run before any step has started.
        if (!exists(item.path)) {
          return fail(Errc::kNotFound, fmt::format("{}: {}: input file {} does not exist",
                                                   st.origin, key, str::printable(item.path, 200)));
        }
      }
      in.items.push_back(std::move(item));
    }
    input_names.insert(name);
    st.inputs.emplace(name, std::move(in));
  }

  std::set<std::string> output_names(st.outputs.begin(), st.outputs.end());
  Scope full = paths;
  full.inputs = &input_names;
  full.outputs = &output_names;
  full.cores = st.cores;
  full.gpus = st.gpus;
  full.tasks = st.tasks;
  full.nodes = st.nodes;
  if (s.run) {
    st.shell = true;
    auto w = expand_template(*s.run, full);
    if (!w.ok()) return step_error(st.origin, "run", w.error());
    st.command.push_back(std::move(*w));
  } else {
    for (size_t i = 0; i < s.cmd->size(); ++i) {
      std::string key = fmt::format("cmd[{}]", i);
      auto w = expand_template((*s.cmd)[i], full);
      if (!w.ok()) return step_error(st.origin, key, w.error());
      // A list becomes one argv word per path, which only has a meaning when the
      // placeholder is the whole word (spec 04 §3.3).
      for (const Segment& seg : *w) {
        if (seg.kind == Segment::Kind::kInput && st.inputs.at(seg.value).is_list &&
            w->size() != 1) {
          return fail(Errc::kInvalidInput,
                      fmt::format("{}: {}: list input {{in.{}}} must be a whole argv word",
                                  st.origin, key, seg.value));
        }
      }
      st.command.push_back(std::move(*w));
    }
  }
  for (const auto& [var, value] : s.env) {
    auto w = expand_template(value, full);
    if (!w.ok()) return step_error(st.origin, "env." + var, w.error());
    st.env.emplace(var, std::move(*w));
  }
  return st;
}

// Resolves "@step/output" (spec 04 §2.3): the step is everything between '@' and the
// last '/', so that the output name (which has no '/') is unambiguous.
Result<void> resolve_ref(InputItem& item, const std::string& origin, const std::string& input,
                         const std::vector<Step>& steps,
                         const std::unordered_map<std::string, size_t>& by_name) {
  std::string key = "inputs." + input;
  size_t slash = item.text.rfind('/');
  if (slash == std::string::npos || slash == 1 || slash + 1 == item.text.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: {}: '{}' is not a reference of the form @step/output", origin, key,
                            str::printable(item.text)));
  }
  std::string step = item.text.substr(1, slash - 1);
  std::string output = item.text.substr(slash + 1);
  auto it = by_name.find(step);
  if (it == by_name.end()) {
    return fail(Errc::kNotFound, fmt::format("{}: {}: '{}' names no step '{}'", origin, key,
                                             str::printable(item.text), str::printable(step)));
  }
  const Step& target = steps[it->second];
  if (std::find(target.outputs.begin(), target.outputs.end(), output) == target.outputs.end()) {
    return fail(Errc::kNotFound,
                fmt::format("{}: {}: '{}': step '{}' has no output '{}' (it has: {})", origin, key,
                            str::printable(item.text), step, str::printable(output),
                            target.outputs.empty() ? "none" : str::join(target.outputs, ", ")));
  }
  item.step = it->second;
  item.output = std::move(output);
  return Ok{};
}

// The steps around one cycle among `left` (steps Kahn's algorithm could not order), in
// data-flow order, first step repeated at the end.
std::vector<size_t> find_cycle(const std::vector<Step>& steps, const std::vector<bool>& left) {
  size_t start = 0;
  while (!left[start]) ++start;
  // Every step left has a dep that is left too, so walking deps must revisit a step.
  std::vector<size_t> path;
  std::unordered_map<size_t, size_t> at;
  size_t cur = start;
  while (!at.count(cur)) {
    at[cur] = path.size();
    path.push_back(cur);
    for (size_t d : steps[cur].deps) {
      if (left[d]) {
        cur = d;
        break;
      }
    }
  }
  std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(at[cur]), path.end());
  cycle.push_back(cur);
  std::reverse(cycle.begin(), cycle.end());  // deps point against the flow of data
  return cycle;
}

// Orders `steps` so each comes after its deps (Kahn's algorithm, smallest expansion
// index first, so the order is stable), remapping every index.
Result<std::vector<Step>> topological(std::vector<Step> steps, const std::string& path) {
  size_t n = steps.size();
  std::vector<size_t> pending(n);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    pending[i] = steps[i].deps.size();
    for (size_t d : steps[i].deps) dependents[d].push_back(i);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t d : dependents[i]) {
      if (--pending[d] == 0) ready.push(d);
    }
  }
  if (order.size() != n) {
    std::vector<bool> left(n, true);
    for (size_t i : order) left[i] = false;
    std::vector<std::string> names;
    for (size_t i : find_cycle(steps, left)) names.push_back(steps[i].name);
    return fail(Errc::kInvalidInput,
                fmt::format("{}: cycle: {} (each step reads an output of the next)", path,
                            str::join(names, " -> ")));
  }
  std::vector<size_t> new_index(n);
  for (size_t k = 0; k < n; ++k) new_index[order[k]] = k;
  std::vector<Step> out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    Step s = std::move(steps[order[k]]);
    for (size_t& d : s.deps) d = new_index[d];
    std::sort(s.deps.begin(), s.deps.end());
    for (auto& [name, in] : s.inputs) {
      for (InputItem& item : in.items) {
        if (item.kind == InputItem::Kind::kStepOutput) item.step = new_index[item.step];
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::optional<size_t> Graph::find(std::string_view step_name) const {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].name == step_name) return i;
  }
  return std::nullopt;
}

Result<void> select_steps(Graph& graph, const std::vector<std::string>& targets) {
  if (targets.empty()) return Ok{};
  std::vector<bool> keep(graph.steps.size(), false);
  std::vector<size_t> todo;
  for (const auto& t : targets) {
    auto i = graph.find(t);
    if (!i) {
      return fail(Errc::kNotFound,
                  fmt::format("target '{}' is not a step of {}", str::printable(t), graph.path));
    }
    todo.push_back(*i);
  }
  while (!todo.empty()) {
    size_t i = todo.back();
    todo.pop_back();
    if (keep[i]) continue;
    keep[i] = true;
    for (size_t d : graph.steps[i].deps) todo.push_back(d);
  }
  // Old index -> new: every dep of a kept step is kept, and comes before it.
  std::vector<size_t> renumber(graph.steps.size(), 0);
  std::vector<Step> kept;
  for (size_t i = 0; i < graph.steps.size(); ++i) {
    if (!keep[i]) continue;
    renumber[i] = kept.size();
    kept.push_back(std::move(graph.steps[i]));
  }
  for (Step& s : kept) {
    for (size_t& d : s.deps) d = renumber[d];
    for (auto& [name, input] : s.inputs) {
      for (InputItem& item : input.items) {
        if (item.kind == InputItem::Kind::kStepOutput) item.step = renumber[item.step];
      }
    }
  }
  graph.steps = std::move(kept);
  return Ok{};
}

Result<Graph> expand(const PipelineFile& file, const FileExists& exists) {
  Graph g;
  g.path = file.path;
  g.dir = file.dir;
  g.name = file.name;
  g.tools = file.tools;

  // 1. Expand every [[step]] over its foreach product, in file order.
  std::vector<Step> steps;
  std::vector<PendingRef> pending;
  std::unordered_map<std::string, size_t> by_name;
  for (const StepSpec& s : file.steps) {
    std::optional<size_t> count = combinations(s);
    if (!count || steps.size() + *count > kMaxExpandedSteps) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: foreach: expands the pipeline past {} steps",
                              origin_of(file, s, ""), kMaxExpandedSteps));
    }
    for (size_t i = 0; i < *count; ++i) {
      std::vector<std::pair<std::string, size_t>> refs;
      BERTH_TRY(Step st, expand_one(file, s, bindings_of(s, i), exists, refs));
      auto [it, fresh] = by_name.emplace(st.name, steps.size());
      if (!fresh) {
        const Step& other = steps[it->second];
        if (other.spec == st.spec) {
          return fail(Errc::kInvalidInput,
                      fmt::format("{}: name: expands to '{}' for more than one foreach "
                                  "combination (use every foreach key in the name)",
                                  st.origin, str::printable(st.name)));
        }
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: name: expands to '{}', which {} also names", st.origin,
                                str::printable(st.name), other.origin));
      }
      for (auto& [input, item] : refs) pending.push_back(PendingRef{steps.size(), input, item});
      steps.push_back(std::move(st));
    }
  }

  // 2. Resolve "@step/output" references now that every name is known.
  for (const PendingRef& r : pending) {
    Step& st = steps[r.step];
    InputItem& item = st.inputs.at(r.input).items[r.item];
    BERTH_CHECK(resolve_ref(item, st.origin, r.input, steps, by_name));
    st.deps.push_back(item.step);
  }
  for (Step& st : steps) {
    std::sort(st.deps.begin(), st.deps.end());
    st.deps.erase(std::unique(st.deps.begin(), st.deps.end()), st.deps.end());
  }

  // 3. Order the steps; a cycle is an error naming the steps around it.
  BERTH_TRY(g.steps, topological(std::move(steps), file.path));
  return g;
}

}  // namespace berth::pipeline
