// Expansion of a PipelineFile into a Graph (spec 04 §3).
#include "pipeline/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "pipeline/beside.h"
#include "pipeline/dir_output.h"
#include "pipeline/fan_in.h"
#include "pipeline/graph_order.h"
#include "place/pool.h"
#include "util/flat_index.h"
#include "util/strings.h"
#include "util/suggest.h"

namespace berth::pipeline {
namespace {

std::string where(const PipelineFile& pf, SourcePos p) {
  return p.line ? fmt::format("{}:{}:{}", pf.path, p.line, p.column) : pf.path;
}

// "p.toml:9:1: step 'count-{sample}'": the table, by its name template.
std::string origin_of(const PipelineFile& pf, const StepSpec& s) {
  return fmt::format("{}: step '{}'", where(pf, s.pos), str::printable(s.name));
}

Failure step_error(const std::string& origin, std::string_view key, const Error& e) {
  return fail(e.code(), fmt::format("{}: {}: {}", origin, key, e.message()));
}

// `origin` ("<file>:<line>:<col>: step …") placed at the step's key `key` instead,
// where the file wrote it.
std::string at_key(const PipelineFile& pf, const StepSpec& s, const std::string& origin,
                   const std::string& key) {
  auto at = s.key_pos.find(key);
  if (at == s.key_pos.end() || at->second.line == 0) return origin;
  size_t step = origin.find(": step ");
  std::string who = step == std::string::npos ? origin : origin.substr(step + 2);
  return fmt::format("{}: {}", where(pf, at->second), who);
}

// An error in the step's key `key` (named `label` in the message), placed where the file
// wrote it (spec 04 §1): the file:line:col of that key, the step by its name template
// and, once known, expanded.
Failure key_error(const PipelineFile& pf, const StepSpec& s, const std::string& origin,
                  const std::string& key, const Error& e, std::string_view label = {}) {
  if (label.empty()) label = key;
  return step_error(at_key(pf, s, origin, key), label, e);
}

// The number of foreach combinations, or nullopt past kMaxExpandedSteps.
std::optional<size_t> combinations(const StepSpec& s) {
  if (s.foreach_rows) return s.foreach.empty() ? 1 : s.foreach.begin()->second.size();
  size_t n = 1;
  for (const auto& [k, values] : s.foreach) {
    if (values.size() > kMaxExpandedSteps / n) return std::nullopt;
    n *= values.size();
  }
  return n;
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

// Input files that do not exist: the first few messages, and how many in all.
struct MissingFiles {
  static constexpr size_t kNamed = 10;
  std::vector<std::string> named;
  size_t count = 0;
};

// One [[step]] table, compiled once: its shared part (StepTable) and every template,
// checked against what may be named where (spec 04 §3.2), ready to expand once per
// foreach combination.
struct CompiledStep {
  std::shared_ptr<const StepTable> table;
  Template name;
  struct InputTemplates {
    std::string name;
    bool is_list = false;
    std::vector<std::string> written;  // as the file wrote each item, for messages
    std::vector<Template> items;
  };
  std::vector<InputTemplates> inputs;  // sorted by name
};

// The values of combination `i` (one per key, in key order): the first key varies
// slowest, each key's values in the order given (spec 04 §3.1).
void values_of(const StepTable& t, size_t i, std::vector<std::string_view>& out) {
  out.resize(t.keys.size());
  if (t.rows) {
    for (size_t k = 0; k < t.keys.size(); ++k) out[k] = t.values[k][i];
    return;
  }
  for (size_t k = t.keys.size(); k-- > 0;) {
    const TextList& values = t.values[k];
    out[k] = values[i % values.size()];
    i /= values.size();
  }
}

// "p.toml:9:1: step 'count-{sample}'", plus " ('count-a')" when `expanded` differs
// from the template.
std::string origin_text(const StepTable& t, std::string_view expanded) {
  if (expanded.empty() || expanded == t.name_template) return t.where;
  return fmt::format("{} ('{}')", t.where, str::printable(expanded));
}

// Compiles table `s`. Errors in a template are the same for every combination, so
// they are found here, once, and named with the first combination's name.
// `s`'s foreach values go into the table, and are let go of: a key may have 10^6.
Result<CompiledStep> compile_step(const PipelineFile& pf, StepSpec& s) {
  auto table = std::make_shared<StepTable>();
  table->where = origin_of(pf, s);
  table->name_template = s.name;
  table->rows = s.foreach_rows;
  for (auto& [k, values] : s.foreach) {
    table->keys.push_back(k);
    table->values.emplace_back(values);
    std::vector<std::string>().swap(values);
  }
  table->outputs = s.outputs;
  for (const std::string& o : s.outputs) {
    auto it = s.canonical.find(o);
    table->canonical[o] = s.directories.count(o) ? std::string(kTreeForm)
                          : it == s.canonical.end() ? "bytes"
                                                    : it->second;
  }
  table->tools = s.tools;
  std::sort(table->tools.begin(), table->tools.end());

  CompiledStep c;
  Scope names;  // a name may use foreach keys and {config.X} only
  names.config = &pf.config;
  std::set<std::string> used_config;
  names.used_config = &used_config;
  {
    auto name = Template::compile(s.name, table->keys, names);
    if (!name.ok()) return key_error(pf, s, table->where, "name", name.error());
    c.name = std::move(*name);
  }
  // A string param is a template over the foreach keys and config (spec 04 §3.2): one
  // that uses a key has a value per step, kept compiled; the rest are text.
  for (const auto& [name, p] : s.params) {
    if (p.type != Param::Type::kString) {
      table->params.emplace(name, p);
      continue;
    }
    auto t = Template::compile(p.text, table->keys, names);
    if (!t.ok()) return key_error(pf, s, table->where, "params." + name, t.error());
    if (t->uses_keys()) {
      table->param_templates.emplace(name, std::move(*t));
    } else {
      table->params.emplace(name, Param{Param::Type::kString, t->expand_plain({})});
    }
  }
  std::map<std::string, const Template*> param_templates;
  for (const auto& [name, t] : table->param_templates) param_templates.emplace(name, &t);
  std::vector<std::string_view> first;
  values_of(*table, 0, first);
  const std::string first_name = c.name.expand_plain(first);
  const std::string origin = origin_text(*table, first_name);
  if (auto problem = step_name_problem(first_name)) {
    return fail(Errc::kInvalidInput, fmt::format("{}: name: {}", origin, *problem));
  }

  // Input paths may use foreach keys, params and config; never resources or other paths.
  Scope paths;
  paths.params = &table->params;
  paths.param_templates = &param_templates;
  paths.config = &pf.config;
  paths.used_config = &used_config;
  std::set<std::string> input_names;
  for (const auto& [name, spec] : s.inputs) {
    CompiledStep::InputTemplates in;
    in.name = name;
    in.is_list = spec.is_list;
    for (const std::string& v : spec.values) {
      auto t = Template::compile(v, table->keys, paths);
      if (!t.ok()) return key_error(pf, s, origin, "inputs." + name, t.error());
      in.written.push_back(v);
      in.items.push_back(std::move(*t));
    }
    input_names.insert(name);
    c.inputs.push_back(std::move(in));
  }

  std::set<std::string> output_names(s.outputs.begin(), s.outputs.end());
  Scope full = paths;
  full.inputs = &input_names;
  full.outputs = &output_names;
  full.cores = s.cores;
  full.gpus = s.gpus;
  if (s.gpu_share > 0) full.gpu_share = place::gpu_share_text(s.gpu_share);
  full.tasks = s.tasks;
  full.nodes = s.nodes;
  if (s.run) {
    auto w = Template::compile(*s.run, table->keys, full);
    if (!w.ok()) return key_error(pf, s, origin, "run", w.error());
    table->command.push_back(std::move(*w));
  } else {
    for (size_t i = 0; i < s.cmd->size(); ++i) {
      std::string key = fmt::format("cmd[{}]", i);
      auto w = Template::compile((*s.cmd)[i], table->keys, full);
      if (!w.ok()) return key_error(pf, s, origin, "cmd", w.error(), key);
      // A list becomes one argv word per path, which only has a meaning when the
      // placeholder is the whole word (spec 04 §3.3).
      for (const std::string& input : w->inputs()) {
        if (s.inputs.at(input).is_list && !w->only_one_piece()) {
          return fail(Errc::kInvalidInput,
                      fmt::format("{}: {}: list input {{in.{}}} must be a whole argv word",
                                  origin, key, input));
        }
      }
      table->command.push_back(std::move(*w));
    }
  }
  for (const auto& [var, value] : s.env) {
    auto w = Template::compile(value, table->keys, full);
    if (!w.ok()) return key_error(pf, s, origin, "env." + var, w.error());
    table->env.emplace_back(var, std::move(*w));
  }
  for (const std::string& name : used_config) {
    table->config_used.emplace_back(name, pf.config.at(name).text);
  }
  c.table = std::move(table);
  return c;
}

// Step `combination` of table `c`, its name already expanded and checked: its
// resources and inputs (file inputs checked to exist). Its command and env are the
// table's, expanded when asked for. "@step/output" references are left for later, in
// `refs`.
Result<Step> expand_one(const PipelineFile& pf, const StepSpec& s, const CompiledStep& c,
                        size_t combination, std::string name,
                        const std::vector<std::string_view>& values, const FileExists& exists,
                        std::vector<std::pair<std::string, size_t>>& refs,
                        MissingFiles& missing) {
  Step st(c.table);
  st.name = std::move(name);
  st.spec = s.index;
  st.combination = static_cast<uint32_t>(combination);
  st.cores = s.cores;
  st.gpus = s.gpus;
  st.gpu_share = s.gpu_share;
  st.tasks = s.tasks;
  st.nodes = s.nodes;
  st.memory_cap_mb = s.memory_cap_mb;
  st.mpi = s.mpi;
  st.retries = s.retries;
  st.timeout = s.timeout;
  for (const CompiledStep::InputTemplates& t : c.inputs) {
    Input in;
    in.name = t.name;
    in.is_list = t.is_list;
    in.items.reserve(t.items.size());
    for (size_t k = 0; k < t.items.size(); ++k) {
      InputItem item;
      item.text = t.items[k].expand_plain(values);
      if (item.text.empty()) {
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: inputs.{}: '{}' expands to an empty path", st.origin(),
                                t.name, str::printable(t.written[k])));
      }
      if (item.text.front() == '@') {
        item.kind = InputItem::Kind::kStepOutput;
        refs.emplace_back(t.name, in.items.size());
      } else {
        item.kind = InputItem::Kind::kFile;
        item.path = join_path(pf.dir, item.text);
        // Checked now, so that a typo fails the run before any step has started; every
        // missing file is named at once, not one per run.
        if (!exists(item.path)) {
          if (missing.named.size() < MissingFiles::kNamed) {
            missing.named.push_back(fmt::format(
                "{}: inputs.{}: input file {} does not exist",
                at_key(pf, s, st.origin(), "inputs." + t.name), t.name,
                str::printable(item.path, 200)));
          }
          ++missing.count;
        }
      }
      in.items.push_back(std::move(item));
    }
    st.inputs.emplace_hint(st.inputs.end(), t.name, std::move(in));
  }
  st.shell = s.run.has_value();
  return st;
}

// Every step's index by its name (a graph may hold 10^6 names).
struct StepName {
  const std::vector<Step>* steps;
  std::string_view operator()(size_t i) const { return (*steps)[i].name; }
};
using NameIndex = FlatIndex<StepName>;

// Resolves "@step/output" (spec 04 §2.3): the step is everything between '@' and the
// last '/', so that the output name (which has no '/') is unambiguous.
Result<void> resolve_ref(InputItem& item, const std::string& origin, const std::string& input,
                         const std::vector<Step>& steps, const NameIndex& by_name) {
  std::string key = "inputs." + input;
  size_t slash = item.text.rfind('/');
  if (slash == std::string::npos || slash == 1 || slash + 1 == item.text.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: {}: '{}' is not a reference of the form @step/output", origin, key,
                            str::printable(item.text)));
  }
  std::string step = item.text.substr(1, slash - 1);
  std::string output = item.text.substr(slash + 1);
  auto found = by_name.find(step);
  if (!found) {
    std::vector<std::string_view> names;
    names.reserve(steps.size());
    for (const Step& s : steps) names.push_back(s.name);
    return fail(Errc::kNotFound, fmt::format("{}: {}: '{}' names no step '{}'{}", origin, key,
                                             str::printable(item.text), str::printable(step),
                                             str::did_you_mean(step, names)));
  }
  const Step& target = steps[*found];
  if (std::find(target.outputs.begin(), target.outputs.end(), output) == target.outputs.end()) {
    return fail(Errc::kNotFound,
                fmt::format("{}: {}: '{}': step '{}' has no output '{}' (it has: {})", origin, key,
                            str::printable(item.text), step, str::printable(output),
                            target.outputs.empty() ? "none" : str::join(target.outputs, ", ")));
  }
  item.step = *found;
  item.output = std::move(output);
  return Ok{};
}

}  // namespace

std::string InputItem::staged_name() const {
  if (kind == Kind::kStepOutput) return output;
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // A path naming no file of its own ("data/", "..") is staged under a plain name.
  return name.empty() || name == "." || name == ".." ? "file" : name;
}

TextList::TextList(const std::vector<std::string>& texts) {
  size_t size = 0;
  for (const std::string& t : texts) size += t.size();
  text_.reserve(size);
  ends_.reserve(texts.size());
  for (const std::string& t : texts) {
    text_ += t;
    ends_.push_back(text_.size());
  }
}

const std::shared_ptr<const StepTable>& Step::empty_table() {
  static const auto* empty = new std::shared_ptr<const StepTable>(std::make_shared<StepTable>());
  return *empty;
}

std::vector<Word> Step::command() const {
  std::vector<std::string_view> values;
  values_of(*table, combination, values);
  std::vector<Word> out;
  out.reserve(table->command.size());
  for (const Template& t : table->command) out.push_back(t.expand(values));
  return out;
}

std::map<std::string, Word> Step::env() const {
  std::vector<std::string_view> values;
  values_of(*table, combination, values);
  std::map<std::string, Word> out;
  for (const auto& [var, t] : table->env) out.emplace_hint(out.end(), var, t.expand(values));
  return out;
}

std::map<std::string, Param> Step::params() const {
  if (table->param_templates.empty()) return table->params;
  std::vector<std::string_view> values;
  values_of(*table, combination, values);
  std::map<std::string, Param> out = table->params;
  for (const auto& [param, t] : table->param_templates) {
    out.emplace(param, Param{Param::Type::kString, t.expand_plain(values)});
  }
  return out;
}

std::map<std::string, std::string> Step::bindings() const {
  std::vector<std::string_view> values;
  values_of(*table, combination, values);
  std::map<std::string, std::string> out;
  for (size_t k = 0; k < values.size(); ++k) out.emplace(table->keys[k], std::string(values[k]));
  return out;
}

std::string Step::origin() const { return origin_text(*table, name); }

std::optional<size_t> Graph::find(std::string_view step_name) const {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].name == step_name) return i;
  }
  return std::nullopt;
}

Result<Graph> expand(const PipelineFile& file, const FileExists& exists) {
  return expand(PipelineFile(file), exists);
}

namespace {

// Every missing input file, in one error: the first few named, then how many more.
Result<void> missing_files(const MissingFiles& missing) {
  if (missing.count == 0) return Ok{};
  if (missing.count == 1) return fail(Errc::kNotFound, missing.named[0]);
  return fail(Errc::kNotFound,
              fmt::format("{} input files do not exist: {}{}", missing.count,
                          str::join(missing.named, "; "),
                          missing.count > missing.named.size()
                              ? fmt::format("; and {} more", missing.count - missing.named.size())
                              : std::string()));
}

// Step 1 of expand(): every [[step]] of `file` over its foreach product, in file order,
// into `steps`, each "@step/output" reference left in `pending`; `by_name` indexes them.
Result<void> expand_specs(PipelineFile& file, const FileExists& exists, std::vector<Step>& steps,
                          std::vector<PendingRef>& pending, NameIndex& by_name,
                          const std::function<bool(size_t, uint32_t)>* only = nullptr) {
  size_t total = 0;
  for (const StepSpec& s : file.steps) {
    std::optional<size_t> count = combinations(s);
    if (!count || total + *count > kMaxExpandedSteps) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: foreach: expands the pipeline past {} steps",
                              origin_of(file, s), kMaxExpandedSteps));
    }
    total += *count;
  }
  steps.reserve(total);
  by_name.reserve(total);
  std::vector<std::string_view> values;
  std::vector<std::pair<std::string, size_t>> refs;
  MissingFiles missing;
  BesideFiles beside(file.dir);
  for (StepSpec& s : file.steps) {
    const size_t count = *combinations(s);
    BERTH_TRY(CompiledStep c, compile_step(file, s));
    const bool scan = BesideFiles::may_name_files(*c.table);
    for (size_t i = 0; i < count; ++i) {
      if (only && !(*only)(s.index, static_cast<uint32_t>(i))) continue;
      values_of(*c.table, i, values);
      std::string name = c.name.expand_plain(values);
      if (auto problem = step_name_problem(name)) {
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: name: {}", origin_text(*c.table, name), *problem));
      }
      if (auto other = by_name.find(name)) {
        const Step& o = steps[*other];
        std::string origin = origin_text(*c.table, name);
        if (o.spec == s.index) {
          return fail(Errc::kInvalidInput,
                      fmt::format("{}: name: expands to '{}' for more than one foreach "
                                  "combination (use every foreach key in the name)",
                                  origin, str::printable(name)));
        }
        return fail(Errc::kInvalidInput,
                    fmt::format("{}: name: expands to '{}', which {} also names", origin,
                                str::printable(name), o.origin()));
      }
      refs.clear();
      BERTH_TRY(Step st,
                expand_one(file, s, c, i, std::move(name), values, exists, refs, missing));
      // Files beside the pipeline its command names are inputs of its own (beside.h).
      if (scan) {
        for (const std::string& rel : beside.named_by(st)) {
          Input in;
          in.name = beside_input_name(rel);
          InputItem item;
          item.text = rel;
          item.path = join_path(file.dir, rel);
          in.items.push_back(std::move(item));
          st.inputs.emplace(in.name, std::move(in));
        }
      }
      for (auto& [input, item] : refs) pending.push_back(PendingRef{steps.size(), input, item});
      steps.push_back(std::move(st));
      by_name.insert(steps.size() - 1);
    }
  }
  return missing_files(missing);
}

void sort_deps(std::vector<Step>& steps) {
  for (Step& st : steps) {
    std::sort(st.deps.begin(), st.deps.end());
    st.deps.erase(std::unique(st.deps.begin(), st.deps.end()), st.deps.end());
  }
}

}  // namespace

Result<Graph> expand(PipelineFile&& file, const FileExists& exists) {
  Graph g;
  g.path = file.path;
  g.dir = file.dir;
  g.name = file.name;
  g.tools = file.tools;

  // 1. Expand every [[step]] over its foreach product, in file order.
  std::vector<Step> steps;
  std::vector<PendingRef> pending;
  NameIndex by_name(StepName{&steps});
  BERTH_CHECK(expand_specs(file, exists, steps, pending, by_name));

  // 2. Fan-ins become one item per matching step (fan_in.h); then every "@step/output"
  // reference is resolved, now that every name is known.
  if (std::any_of(pending.begin(), pending.end(), [&steps](const PendingRef& r) {
        return is_fan_in(steps[r.step].inputs.at(r.input).items[r.item].text);
      })) {
    BERTH_CHECK(expand_fan_ins(steps, [&file](const Step& st, const std::string& input) {
      return at_key(file, file.steps[st.spec], st.origin(), "inputs." + input);
    }));
    pending.clear();
    for (size_t i = 0; i < steps.size(); ++i) {
      for (const auto& [name, in] : steps[i].inputs) {
        for (size_t k = 0; k < in.items.size(); ++k) {
          if (in.items[k].kind == InputItem::Kind::kStepOutput) {
            pending.push_back(PendingRef{i, name, k});
          }
        }
      }
    }
  }
  for (const PendingRef& r : pending) {
    Step& st = steps[r.step];
    InputItem& item = st.inputs.at(r.input).items[r.item];
    std::string origin = at_key(file, file.steps[st.spec], st.origin(), "inputs." + r.input);
    BERTH_CHECK(resolve_ref(item, origin, r.input, steps, by_name));
    st.deps.push_back(item.step);
  }
  sort_deps(steps);

  // 3. Order the steps; a cycle is an error naming the steps around it.
  BERTH_TRY(g.steps, topological(std::move(steps), file.path));
  return g;
}

Result<std::vector<Step>> expand_tables(PipelineFile&& file, const FileExists& exists,
                                        const GraphPlaces& places,
                                        const std::function<bool(size_t, uint32_t)>* only) {
  std::vector<Step> steps;
  std::vector<PendingRef> pending;
  NameIndex by_name(StepName{&steps});
  BERTH_CHECK(expand_specs(file, exists, steps, pending, by_name, only));
  // A reference to one of these steps is checked against its outputs; to any other
  // step, against the outputs `places` knows. Either way it names the step's place in
  // the whole graph.
  for (const PendingRef& r : pending) {
    Step& st = steps[r.step];
    InputItem& item = st.inputs.at(r.input).items[r.item];
    // A fan-in needs every step's name: for reading the whole file to resolve.
    if (is_fan_in(item.text)) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}: inputs.{}: a fan-in is resolved over the whole file",
                              st.origin(), r.input));
    }
    size_t slash = item.text.rfind('/');
    std::string_view name = slash == std::string::npos || slash < 1
                                ? std::string_view()
                                : std::string_view(item.text).substr(1, slash - 1);
    std::optional<size_t> place = places.index_of(name);
    if (!place) {
      return fail(Errc::kNotFound, fmt::format("{}: inputs.{}: '{}' names no step", st.origin(),
                                               r.input, str::printable(item.text)));
    }
    if (by_name.find(name)) {
      BERTH_CHECK(resolve_ref(item, st.origin(), r.input, steps, by_name));
    } else {
      auto table = std::make_shared<StepTable>();
      table->outputs = places.outputs_of(*place);
      std::vector<Step> other;
      other.emplace_back(std::move(table));
      other.back().name = std::string(name);
      NameIndex one(StepName{&other});
      one.insert(0);
      BERTH_CHECK(resolve_ref(item, st.origin(), r.input, other, one));
    }
    item.step = *place;
    st.deps.push_back(*place);
  }
  sort_deps(steps);
  return steps;
}

}  // namespace berth::pipeline
