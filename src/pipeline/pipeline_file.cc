// The pipeline file parser: TOML (toml++, read through util/toml_fields.h) into a
// PipelineFile (spec 04 §1–§2).
#include "pipeline/pipeline_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include "pipeline/canonical.h"
#include "pipeline/fan_in.h"
#include "pipeline/foreach_spec.h"
#include "pipeline/toml_param.h"
#include "pipeline/worker.h"
#include "util/env.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/suggest.h"
#include "util/toml_fields.h"

namespace berth::pipeline {
namespace {

constexpr size_t kMaxStringBytes = 64 * 1024;
constexpr size_t kMaxArrayItems = 1 << 16;
constexpr TomlLimits kLimits{kMaxStringBytes, kMaxArrayItems};

SourcePos pos_of(const toml::node& n) {
  const auto& b = n.source().begin;
  return SourcePos{b.line, b.column};
}

// Each name rule's failure, as text for the caller's "key: what".
std::optional<std::string> check_chars(std::string_view name, std::string_view extra,
                                       std::string_view rule) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 256) return "longer than 256 characters";
  for (char c : name) {
    if (!str::is_alnum(c) && c != '_' && extra.find(c) == std::string_view::npos) {
      return fmt::format("'{}' has a character outside {}", str::printable(name), rule);
    }
  }
  return std::nullopt;
}

Result<void> read_inputs(TomlFields& f, StepSpec& s) {
  BERTH_TRY(const toml::table* t, f.table("inputs"));
  if (!t) return Ok{};
  TomlFields g = f.sub(*t, "inputs");
  for (const auto& [key, value] : *t) {
    std::string k(key.str());
    const toml::node* n = g.node(k);
    if (auto problem = item_name_problem(k)) return g.error(n, str::printable(k), *problem);
    InputSpec in;
    in.name = k;
    in.pos = pos_of(*n);
    if (n->is_array()) {
      in.is_list = true;
      BERTH_TRY(in.values, g.strings_of(n, k, /*allow_empty=*/true));
    } else if (n->is_string()) {
      BERTH_TRY(std::string v, g.string_of(n, k));
      in.values.push_back(std::move(v));
    } else {
      return g.wrong_type(k, "a string or an array of strings", *n);
    }
    for (const std::string& v : in.values) {
      if (v.empty()) return g.error(n, k, "a path must not be empty");
      // A fan-in ("@count-*/counts") is every matching step's output: a list, however
      // it was written (fan_in.h).
      if (is_fan_in(v)) in.is_list = true;
    }
    s.inputs.emplace(k, std::move(in));
  }
  return Ok{};
}

Result<void> read_params(TomlFields& f, StepSpec& s) {
  BERTH_TRY(const toml::table* t, f.table("params"));
  if (!t) return Ok{};
  TomlFields g = f.sub(*t, "params");
  for (const auto& [key, value] : *t) {
    std::string k(key.str());
    const toml::node* n = g.node(k);
    if (auto problem = item_name_problem(k)) return g.error(n, str::printable(k), *problem);
    BERTH_TRY(Param p, param_of(g, *n, k));
    s.params.emplace(k, std::move(p));
  }
  return Ok{};
}

// A table whose every value is a string: canonical and env.
Result<std::map<std::string, std::string>> string_table(TomlFields& f, std::string_view k,
                                                        bool env_names) {
  std::map<std::string, std::string> out;
  BERTH_TRY(const toml::table* t, f.table(k));
  if (!t) return out;
  TomlFields g = f.sub(*t, k);
  for (const auto& [key, value] : *t) {
    std::string name(key.str());
    const toml::node* n = g.node(name);
    if (env_names && !Env::valid_name(name)) {
      return g.error(n, str::printable(name), "not a valid environment variable name");
    }
    BERTH_TRY(std::string v, g.string_of(n, name));
    out.emplace(name, std::move(v));
  }
  return out;
}

// The keys a [[step]] may hold (spec 04 §2.3), and those [defaults] may give (§2.5).
const std::vector<std::string_view> kStepKeys = {
    "name",    "foreach", "run",  "cmd",   "inputs", "outputs",       "params",
    "tools",   "cores",   "gpus", "tasks", "nodes",  "memory_cap_mb", "mpi",
    "retries", "timeout", "canonical", "env"};
const std::vector<std::string_view> kDefaultKeys = {
    "cores", "gpus", "tasks", "nodes", "memory_cap_mb",
    "mpi",   "retries", "timeout", "tools", "env"};

// `gpus`: a whole count, or a share of one device (0.5), kept in thousandths.
// `cores`, after gpus, tasks and nodes: 0 is a step that needs no core of its own (spec
// 04 §2.3), one task on the node berth runs on, beside the steps that hold cores; a
// step that asks for more than that cannot also ask for none.
Result<void> read_cores(TomlFields& f, StepSpec& s) {
  BERTH_TRY(std::optional<int64_t> cores, f.integer("cores", 0, kMaxCores));
  if (!cores) return Ok{};
  s.cores = static_cast<int>(*cores);
  if (s.cores > 0) return Ok{};
  const char* also = s.tasks > 1                     ? "tasks"
                     : s.gpus > 0 || s.gpu_share > 0 ? "gpus"
                     : s.nodes                       ? "nodes"
                                                     : nullptr;
  if (also == nullptr) return Ok{};
  return f.error(f.node("cores"), "cores",
                 fmt::format("0 (no core of its own: one task, unbound, on the node berth runs "
                             "on) cannot go with {}; give cores = 1 or more",
                             also));
}

Result<void> read_gpus(TomlFields& f, StepSpec& s) {
  const toml::node* n = f.node("gpus");
  if (!n) return Ok{};
  if (n->is_integer()) {
    int64_t v = n->as_integer()->get();
    if (v < 0 || v > kMaxGpus) {
      return f.error(n, "gpus", fmt::format("{} is out of range [0, {}]", v, kMaxGpus));
    }
    s.gpus = static_cast<int>(v);
    return Ok{};
  }
  if (!n->is_floating_point()) return f.wrong_type("gpus", "a GPU count or a share of one", *n);
  const double v = n->as_floating_point()->get();
  if (v >= 0 && v <= kMaxGpus && v == std::floor(v)) {
    s.gpus = static_cast<int>(v);  // 2.0: a whole count written as a float
    return Ok{};
  }
  const double thousandths = v * 1000;
  if (!(v > 0 && v < 1)) {
    return f.error(n, "gpus",
                   fmt::format("{} is neither a whole count nor a share of one device (between "
                               "0 and 1, as 0.5); a share spans one device",
                               v));
  }
  if (std::abs(thousandths - std::round(thousandths)) > 1e-6 || std::round(thousandths) < 1) {
    return f.error(n, "gpus",
                   fmt::format("{}: a share of a device is counted in thousandths (0.001)", v));
  }
  s.gpu_share = static_cast<int>(std::round(thousandths));
  return Ok{};
}

// `text` with its {config.X} placeholders expanded, where nothing else may be named (a
// canonicaliser's command, a tool's version argv); an error at `n` names `k`.
Result<std::string> with_config(const TomlFields& f, const toml::node* n, std::string_view k,
                                const std::string& text, const PipelineFile& pf) {
  if (text.find_first_of("{}") == std::string::npos) return text;
  Scope scope;
  scope.config = &pf.config;
  auto expanded = expand_plain(text, scope);
  if (!expanded.ok()) return f.error(n, k, expanded.error().message());
  return std::move(*expanded);
}

// Where each key of `t` (and each entry of its params, env and inputs) is written.
void note_positions(const toml::table& t, StepSpec& s) {
  for (const auto& [key, value] : t) {
    std::string k(key.str());
    s.key_pos[k] = pos_of(value);
    if (k == "params" || k == "env" || k == "inputs") {
      if (const auto* sub = value.as_table()) {
        for (const auto& [k2, v2] : *sub) s.key_pos[k + "." + std::string(k2.str())] = pos_of(v2);
      }
    }
  }
}

// `outputs`: names, each once; "plots/" declares a directory output named plots
// (stored as a tree).
Result<void> read_outputs(TomlFields& f, StepSpec& s) {
  BERTH_TRY(std::optional<std::vector<std::string>> outs, f.strings("outputs", true));
  std::set<std::string> seen;
  for (const std::string& given : outs ? *outs : std::vector<std::string>{}) {
    bool dir = given.size() > 1 && given.back() == '/';
    std::string o = dir ? given.substr(0, given.size() - 1) : given;
    if (auto problem = output_name_problem(o))
      return f.error(f.node("outputs"), "outputs", *problem);
    if (!seen.insert(o).second) {
      return f.error(f.node("outputs"), "outputs", fmt::format("'{}' is listed twice", o));
    }
    if (dir) s.directories.insert(o);
    s.outputs.push_back(std::move(o));
  }
  return Ok{};
}

// `tools`: each defined by a [tools.NAME] table of the file, and named once.
Result<void> read_tools(TomlFields& f, StepSpec& s, const PipelineFile& pf) {
  BERTH_TRY(std::optional<std::vector<std::string>> tools, f.strings("tools", true));
  if (tools) s.tools = std::move(*tools);
  std::set<std::string> seen;
  for (const std::string& tool : s.tools) {
    if (!pf.tools.count(tool)) {
      return f.error(f.node("tools"), "tools",
                     fmt::format("'{}' is not defined by a [tools.{}] table",
                                 str::printable(tool), str::printable(tool)));
    }
    if (!seen.insert(tool).second) {
      return f.error(f.node("tools"), "tools", fmt::format("'{}' is listed twice", tool));
    }
  }
  return Ok{};
}

Result<StepSpec> read_step(const toml::table& t0, size_t index, const PipelineFile& pf,
                           const toml::table* defaults) {
  // [defaults]: each key the step does not give itself is taken whole (spec 04 §2.5),
  // with its own position, so that an error in it points at [defaults].
  std::optional<toml::table> merged;
  if (defaults && !defaults->empty()) {
    merged.emplace(t0);
    for (const auto& [key, value] : *defaults) {
      if (!merged->contains(key.str())) merged->insert(key, value);
    }
  }
  const toml::table& t = merged ? *merged : t0;
  StepSpec s;
  // Positions of its own keys only: a default's is in the file's head, which a file read
  // table by table does not shift.
  note_positions(t0, s);
  s.index = index;
  s.pos = pos_of(t0);
  {
    // Until the name is known, errors name the step by its position.
    TomlFields pre(t, pf.path, kLimits, fmt::format("step #{}", index + 1));
    const toml::node* n = t.get("name");
    if (!n) return pre.error(nullptr, "name", "missing");
    BERTH_TRY(std::string name, pre.string_of(n, "name"));
    if (name.empty()) return pre.error(n, "name", "must not be empty");
    s.name = std::move(name);
  }
  TomlFields f(t, pf.path, kLimits, fmt::format("step '{}'", str::printable(s.name)));
  f.node("name");
  BERTH_CHECK(read_foreach(f, s));
  BERTH_TRY(s.run, f.string("run"));
  BERTH_TRY(s.cmd, f.strings("cmd", /*allow_empty=*/false));
  if (s.run && s.cmd) return f.error(f.node("cmd"), "", "has both run and cmd; give one");
  if (!s.run && !s.cmd) {
    // A misspelt `run` is the likelier mistake: said first, as the unknown key it is.
    for (const auto& [key, value] : t) {
      if (std::find(kStepKeys.begin(), kStepKeys.end(), key.str()) == kStepKeys.end()) {
        return f.error(&value, str::printable(key.str()),
                       "unknown key" + str::did_you_mean(key.str(), kStepKeys));
      }
    }
    return f.error(nullptr, "", "has neither run nor cmd; give one");
  }
  BERTH_CHECK(read_inputs(f, s));
  BERTH_CHECK(read_outputs(f, s));
  BERTH_CHECK(read_params(f, s));
  BERTH_CHECK(read_tools(f, s, pf));
  BERTH_CHECK(read_gpus(f, s));
  BERTH_TRY(std::optional<int64_t> tasks, f.integer("tasks", 1, kMaxTasks));
  BERTH_TRY(std::optional<int64_t> nodes, f.integer("nodes", 1, kMaxNodes));
  BERTH_TRY(s.memory_cap_mb, f.integer("memory_cap_mb", 1, kMaxMemoryCapMb));
  if (tasks) s.tasks = static_cast<int>(*tasks);
  if (nodes) s.nodes = static_cast<int>(*nodes);
  BERTH_CHECK(read_cores(f, s));
  BERTH_TRY(std::optional<std::string> mpi, f.string("mpi"));
  if (mpi) {
    auto mode = wireup::parse_mode(*mpi);
    if (!mode.ok()) return f.error(f.node("mpi"), "mpi", mode.error().message());
    s.mpi = *mode;
  }
  BERTH_TRY(std::optional<int64_t> retries, f.integer("retries", 0, kMaxRetries));
  if (retries) s.retries = static_cast<int>(*retries);
  BERTH_TRY(std::optional<std::string> timeout, f.string("timeout"));
  if (timeout) {
    auto d = parse_duration(*timeout, "");
    if (!d.ok()) return f.error(f.node("timeout"), "timeout", d.error().message().substr(1));
    s.timeout = *d;
  }
  BERTH_TRY(s.canonical, string_table(f, "canonical", false));
  for (auto& [out, form] : s.canonical) {
    const toml::node* n = t.get("canonical")->as_table()->get(out);
    if (std::find(s.outputs.begin(), s.outputs.end(), out) == s.outputs.end()) {
      return f.error(n, "canonical." + str::printable(out), "names no output of this step");
    }
    if (s.directories.count(out)) {
      return f.error(n, "canonical." + str::printable(out),
                     fmt::format("'{}' is a directory output, stored as a tree of its files' "
                                 "bytes: it has no canonical form",
                                 out));
    }
    BERTH_TRY(form, with_config(f, n, "canonical." + str::printable(out), form, pf));
    auto parsed = parse_canonical_form(form);
    if (!parsed.ok()) {
      return f.error(n, "canonical." + str::printable(out), parsed.error().message());
    }
    // Stored by its canonical name, so two spellings of one form key alike (spec 04 §4).
    form = parsed->name();
  }
  BERTH_TRY(s.env, string_table(f, "env", true));
  BERTH_CHECK(f.finish(kStepKeys));
  return s;
}

Result<ToolSpec> read_tool(const toml::table& t, std::string name, const PipelineFile& pf) {
  ToolSpec tool;
  tool.pos = pos_of(t);
  TomlFields f(t, pf.path, kLimits, "", "tools." + str::printable(name));
  if (auto problem = item_name_problem(name)) return f.error(nullptr, "", *problem);
  BERTH_TRY(std::optional<std::vector<std::string>> version, f.strings("version", false));
  if (!version) return f.error(nullptr, "version", "missing (an argv that prints the version)");
  for (std::string& word : *version) {
    BERTH_TRY(word, with_config(f, f.node("version"), "version", word, pf));
  }
  BERTH_CHECK(f.finish({"version"}));
  tool.name = std::move(name);
  tool.version = std::move(*version);
  return tool;
}

std::string stem_of(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

// [config] (spec 04 §2.4): name -> value, then the run's overrides.
Result<void> read_config(TomlFields& f, PipelineFile& pf, const ConfigOverrides* overrides) {
  BERTH_TRY(const toml::table* t, f.table("config"));
  if (t) {
    TomlFields g = f.sub(*t, "config");
    for (const auto& [key, value] : *t) {
      std::string k(key.str());
      const toml::node* n = g.node(k);
      if (auto problem = item_name_problem(k)) return g.error(n, str::printable(k), *problem);
      BERTH_TRY(Param p, param_of(g, *n, k));
      pf.config.emplace(std::move(k), std::move(p));
    }
  }
  if (overrides) BERTH_CHECK(apply_config_overrides(pf.config, *overrides, pf.path));
  return Ok{};
}

// [defaults] (spec 04 §2.5): only keys a step may take from it; their values are read
// with each step that takes them.
Result<const toml::table*> read_defaults(TomlFields& f) {
  BERTH_TRY(const toml::table* t, f.table("defaults"));
  if (!t) return t;
  TomlFields g = f.sub(*t, "defaults");
  for (const auto& [key, value] : *t) {
    std::string_view k = key.str();
    if (std::find(kDefaultKeys.begin(), kDefaultKeys.end(), k) == kDefaultKeys.end()) {
      std::string_view hint = std::find(kStepKeys.begin(), kStepKeys.end(), k) != kStepKeys.end()
                                  ? " (a step's own; not one [defaults] can give)"
                                  : "";
      return g.error(&value, str::printable(k),
                     fmt::format("unknown key{}{}", hint, str::did_you_mean(k, kDefaultKeys)));
    }
  }
  return t;
}

Result<PipelineFile> read_root(const toml::table& root, const std::string& path,
                               const ConfigOverrides* overrides) {
  PipelineFile pf;
  pf.path = path;
  pf.dir = files::parent_dir(path);
  pf.name = stem_of(path);
  TomlFields f(root, path, kLimits);
  {
    BERTH_TRY(const toml::table* t, f.table("pipeline"));
    if (t) {
      TomlFields g = f.sub(*t, "pipeline");
      BERTH_TRY(std::optional<std::string> name, g.string("name"));
      if (name) {
        if (name->empty()) return g.error(g.node("name"), "name", "must not be empty");
        if (name->find_first_of("{}") != std::string::npos) {
          return g.error(g.node("name"), "name",
                         "holds a brace: a pipeline's name is no template");
        }
        pf.name = std::move(*name);
      }
      BERTH_CHECK(g.finish({"name"}));
    }
  }
  BERTH_CHECK(read_config(f, pf, overrides));
  BERTH_TRY(const toml::table* defaults, read_defaults(f));
  {
    BERTH_TRY(const toml::table* t, f.table("tools"));
    if (t) {
      TomlFields g = f.sub(*t, "tools");
      for (const auto& [key, value] : *t) {
        std::string name(key.str());
        const toml::node* n = g.node(name);
        const auto* tt = n->as_table();
        if (!tt) return g.wrong_type(str::printable(name), "a table", *n);
        BERTH_TRY(ToolSpec tool, read_tool(*tt, name, pf));
        pf.tools.emplace(name, std::move(tool));
      }
    }
  }
  if (const toml::node* n = f.node("step")) {
    const auto* a = n->as_array();
    // [[step]] makes an array of tables; `step = ...` written any other way is wrong.
    if (!a) return f.wrong_type("step", "an array of tables ([[step]])", *n);
    pf.steps.reserve(a->size());
    for (size_t i = 0; i < a->size(); ++i) {
      const auto* t = (*a)[i].as_table();
      if (!t) return f.error(&(*a)[i], "step", "each step must be a table ([[step]])");
      BERTH_TRY(StepSpec s, read_step(*t, i, pf, defaults));
      pf.steps.push_back(std::move(s));
    }
  }
  BERTH_CHECK(f.finish({"pipeline", "tools", "config", "defaults", "step"}));
  return pf;
}

// Every position in `s` moved down by `lines` (s was read from a piece of the file that
// begins on line lines + 1).
void shift_lines(StepSpec& s, uint32_t lines) {
  auto shift = [lines](SourcePos& p) {
    if (p.line != 0) p.line += lines;
  };
  shift(s.pos);
  for (auto& [name, in] : s.inputs) shift(in.pos);
  for (auto& [key, glob] : s.foreach_globs) shift(glob.pos);
  if (s.foreach_table) shift(s.foreach_table->pos);
  for (auto& [key, p] : s.key_pos) shift(p);
}

// The documents of a file parsed table by table, kept together (parse_pipeline()'s
// `document`).
struct TableDocuments {
  toml::table head;
  std::vector<toml::table> tables;
};

// Below this many [[step]] tables, one thread parses them all (a second thread costs
// more to start than a few hundred tables take).
constexpr size_t kTablesForTwoThreads = 1024;

// Reads `text` table by table (split_step_tables()): its head alone, then each
// [[step]] table alone, on two threads when there are many. nullopt when any piece
// does not parse or read on its own as the whole file would (a piece whose TOML is
// not one [[step]] table, a head that says anything about `step`, a split inside a
// multi-line string, any error at all): the caller then reads the file whole, which
// gives the one answer and the message every error has always had.
std::optional<PipelineFile> read_by_table(std::string_view text, const std::string& path,
                                          const TableSpans& split,
                                          const std::vector<size_t>* only,
                                          std::shared_ptr<const void>& document,
                                          const ConfigOverrides* overrides) {
  auto docs = std::make_shared<TableDocuments>();
  {
    auto head = parse_toml(text.substr(0, split.head), path);
    if (!head.ok() || head->contains("step")) return std::nullopt;
    docs->head = std::move(*head);
  }
  auto pf = read_root(docs->head, path, overrides);
  if (!pf.ok()) return std::nullopt;
  const toml::table* defaults = docs->head.get_as<toml::table>("defaults");
  // The tables read: all of them, or those asked for.
  const size_t n = only ? only->size() : split.tables.size();
  auto table = [&](size_t k) { return only ? (*only)[k] : k; };
  docs->tables.resize(n);
  std::vector<std::optional<StepSpec>> specs(n);
  // Reads tables [from, to): false at the first that does not stand alone.
  auto read = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) {
      const size_t i = table(k);
      if (i >= split.tables.size()) return false;
      const TableSpan& at = split.tables[i];
      auto doc = parse_toml(text.substr(at.offset, at.length), path);
      if (!doc.ok() || doc->size() != 1) return false;
      const auto* steps = doc->get_as<toml::array>("step");
      if (steps == nullptr || steps->size() != 1 || !(*steps)[0].is_table()) return false;
      auto s = read_step(*(*steps)[0].as_table(), i, *pf, defaults);
      if (!s.ok()) return false;
      shift_lines(*s, at.line - 1);
      specs[k].emplace(std::move(*s));
      docs->tables[k] = std::move(*doc);
    }
    return true;
  };
  bool ok = true;
  if (n >= kTablesForTwoThreads) {
    bool other_ok = true;
    std::thread other([&] { other_ok = read(n / 2, n); });
    ok = read(0, n / 2);
    other.join();
    ok = ok && other_ok;
  } else {
    ok = read(0, n);
  }
  if (!ok) return std::nullopt;
  pf->steps.reserve(n);
  for (auto& s : specs) pf->steps.push_back(std::move(*s));
  pf->tables = split.tables;
  document = std::move(docs);
  return std::move(*pf);
}

}  // namespace

std::optional<TableSpans> split_step_tables(std::string_view text) {
  TableSpans split;
  constexpr std::string_view kHeader = "[[step]]";
  uint32_t line = 1;
  size_t counted = 0;  // newlines are counted in text[0, counted)
  size_t at = text.starts_with(kHeader) ? 0 : text.find("\n[[step]]");
  if (at != 0 && at != std::string_view::npos) ++at;
  while (at != std::string_view::npos) {
    // The header line: "[[step]]", then only blanks or a comment.
    size_t end = text.find('\n', at);
    std::string_view rest = text.substr(at + kHeader.size(),
                                        (end == std::string_view::npos ? text.size() : end) -
                                            at - kHeader.size());
    size_t first = rest.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || rest[first] == '#') {
      line += static_cast<uint32_t>(std::count(text.begin() + counted, text.begin() + at, '\n'));
      counted = at;
      if (split.tables.empty()) {
        split.head = at;
      } else {
        split.tables.back().length = at - split.tables.back().offset;
      }
      split.tables.push_back(TableSpan{at, 0, line});
    }
    if (end == std::string_view::npos) break;
    at = text.find("\n[[step]]", end);
    if (at != std::string_view::npos) ++at;
  }
  if (split.tables.empty()) return std::nullopt;
  split.tables.back().length = text.size() - split.tables.back().offset;
  return split;
}

std::optional<std::string> step_name_problem(std::string_view name) {
  if (auto p = check_chars(name, ".+-", "[A-Za-z0-9_.+-]")) return p;
  if (name.front() == '.') return fmt::format("'{}' starts with '.'", str::printable(name));
  return std::nullopt;
}

std::optional<std::string> item_name_problem(std::string_view name) {
  return check_chars(name, "-", "[A-Za-z0-9_-]");
}

std::optional<std::string> output_name_problem(std::string_view name) {
  if (auto p = check_chars(name, "-.", "[A-Za-z0-9_.-]")) return p;
  if (name.front() == '.') return fmt::format("'{}' starts with '.'", str::printable(name));
  return std::nullopt;
}

std::optional<std::string> foreach_key_problem(std::string_view name) {
  if (auto p = check_chars(name, "", "[A-Za-z0-9_]")) return p;
  for (std::string_view reserved : {"cores", "gpus", "tasks", "nodes", "in", "out", "param"}) {
    if (name == reserved) return fmt::format("'{}' is reserved for a placeholder", name);
  }
  return std::nullopt;
}

Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path,
                                    std::shared_ptr<const void>& document,
                                    const ConfigOverrides& overrides) {
  if (text.size() > kMaxPipelineFileBytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: larger than {} bytes", path, kMaxPipelineFileBytes));
  }
  const ConfigOverrides* given = overrides.empty() ? nullptr : &overrides;
  if (auto split = split_step_tables(text)) {
    if (auto pf = read_by_table(text, path, *split, nullptr, document, given)) {
      return std::move(*pf);
    }
  }
  BERTH_TRY(toml::table root, parse_toml(text, path));
  auto kept = std::make_shared<const toml::table>(std::move(root));
  document = kept;
  return read_root(*kept, path, given);
}

Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path,
                                    std::shared_ptr<const void>& document) {
  return parse_pipeline(text, path, document, ConfigOverrides{});
}

std::optional<PipelineFile> read_step_tables(std::string_view text, const std::string& path,
                                             const TableSpans& split,
                                             const std::vector<size_t>& only,
                                             std::shared_ptr<const void>& document) {
  if (text.size() > kMaxPipelineFileBytes) return std::nullopt;
  return read_by_table(text, path, split, &only, document, nullptr);
}

Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path) {
  std::shared_ptr<const void> document;
  return parse_pipeline(text, path, document);
}

}  // namespace berth::pipeline
