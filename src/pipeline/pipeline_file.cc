// The pipeline file parser: TOML (toml++, read through util/toml_fields.h) into a
// PipelineFile (spec 04 §1–§2).
#include "pipeline/pipeline_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>
#include <thread>

#include "pipeline/canonical.h"
#include "pipeline/worker.h"
#include "util/env.h"
#include "util/files.h"
#include "util/strings.h"
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

Result<Param> param_of(const TomlFields& f, const toml::node& n, std::string_view k) {
  if (n.as_string() != nullptr) {
    BERTH_TRY(std::string text, f.string_of(&n, k));
    return Param{Param::Type::kString, std::move(text)};
  }
  if (const auto* i = n.as_integer()) return Param{Param::Type::kInteger, std::to_string(i->get())};
  if (const auto* d = n.as_floating_point()) {
    // fmt's default is the shortest text that reads back to the same double, so the
    // text (and the key) depends on the value, not on how the file spelt it.
    return Param{Param::Type::kFloat, fmt::format("{}", d->get())};
  }
  if (const auto* b = n.as_boolean()) {
    return Param{Param::Type::kBoolean, b->get() ? "true" : "false"};
  }
  return f.wrong_type(k, "a string, integer, float or boolean", n);
}

Result<void> read_foreach(TomlFields& f, StepSpec& s) {
  BERTH_TRY(const toml::table* t, f.table("foreach"));
  if (!t) return Ok{};
  TomlFields g = f.sub(*t, "foreach");
  for (const auto& [key, value] : *t) {
    std::string k(key.str());
    const toml::node* n = g.node(k);
    if (auto problem = foreach_key_problem(k)) return g.error(n, str::printable(k), *problem);
    if (const auto* t2 = n->as_table()) {
      // { glob = "data/{sample}.fastq" }: values discovered from the files present.
      TomlFields h = g.sub(*t2, k);
      BERTH_TRY(std::string pattern, h.required_string("glob"));
      BERTH_CHECK(h.finish());
      s.foreach_globs.emplace(k, ForeachGlob{std::move(pattern), pos_of(*h.node("glob"))});
      continue;
    }
    const auto* a = n->as_array();
    if (!a) return g.wrong_type(k, "an array of strings or integers, or { glob = \"…\" }", *n);
    if (a->empty()) return g.error(n, k, "must not be empty");
    // One key may have as many values as its table may have steps (spec 04 §3.1); the
    // product of all of them is checked when the table is expanded.
    if (a->size() > kMaxExpandedSteps) {
      return g.error(n, k,
                     fmt::format("{} values; a table expands to at most {} steps",
                                 a->size(), kMaxExpandedSteps));
    }
    std::vector<std::string> values;
    values.reserve(a->size());
    for (const toml::node& item : *a) {
      if (const auto* i = item.as_integer()) {
        values.push_back(std::to_string(i->get()));
      } else if (item.is_string()) {
        BERTH_TRY(std::string v, g.string_of(&item, k));
        values.push_back(std::move(v));
      } else {
        return g.error(
            &item, k,
            fmt::format("items must be strings or integers, not {}", toml_type_name(item)));
      }
    }
    s.foreach.emplace(k, std::move(values));
  }
  return Ok{};
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

Result<StepSpec> read_step(const toml::table& t, size_t index, const PipelineFile& pf) {
  StepSpec s;
  s.index = index;
  s.pos = pos_of(t);
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
  if (!s.run && !s.cmd) return f.error(nullptr, "", "has neither run nor cmd; give one");
  BERTH_CHECK(read_inputs(f, s));
  {
    BERTH_TRY(std::optional<std::vector<std::string>> outs, f.strings("outputs", true));
    if (outs) s.outputs = std::move(*outs);
    std::set<std::string> seen;
    for (const std::string& o : s.outputs) {
      if (auto problem = item_name_problem(o))
        return f.error(f.node("outputs"), "outputs", *problem);
      if (!seen.insert(o).second) {
        return f.error(f.node("outputs"), "outputs", fmt::format("'{}' is listed twice", o));
      }
    }
  }
  BERTH_CHECK(read_params(f, s));
  {
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
  }
  BERTH_TRY(std::optional<int64_t> cores, f.integer("cores", 1, kMaxCores));
  BERTH_TRY(std::optional<int64_t> gpus, f.integer("gpus", 0, kMaxGpus));
  BERTH_TRY(std::optional<int64_t> tasks, f.integer("tasks", 1, kMaxTasks));
  BERTH_TRY(std::optional<int64_t> nodes, f.integer("nodes", 1, kMaxNodes));
  BERTH_TRY(s.memory_cap_mb, f.integer("memory_cap_mb", 1, kMaxMemoryCapMb));
  if (cores) s.cores = static_cast<int>(*cores);
  if (gpus) s.gpus = static_cast<int>(*gpus);
  if (tasks) s.tasks = static_cast<int>(*tasks);
  if (nodes) s.nodes = static_cast<int>(*nodes);
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
    auto parsed = parse_canonical_form(form);
    if (!parsed.ok()) {
      return f.error(n, "canonical." + str::printable(out), parsed.error().message());
    }
    // Stored by its canonical name, so two spellings of one form key alike (spec 04 §4).
    form = parsed->name();
  }
  BERTH_TRY(s.env, string_table(f, "env", true));
  BERTH_CHECK(f.finish());
  return s;
}

Result<ToolSpec> read_tool(const toml::table& t, std::string name, const std::string& file) {
  ToolSpec tool;
  tool.pos = pos_of(t);
  TomlFields f(t, file, kLimits, "", "tools." + str::printable(name));
  if (auto problem = item_name_problem(name)) return f.error(nullptr, "", *problem);
  BERTH_TRY(std::optional<std::vector<std::string>> version, f.strings("version", false));
  if (!version) return f.error(nullptr, "version", "missing (an argv that prints the version)");
  BERTH_CHECK(f.finish());
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

Result<PipelineFile> read_root(const toml::table& root, const std::string& path) {
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
        pf.name = std::move(*name);
      }
      BERTH_CHECK(g.finish());
    }
  }
  {
    BERTH_TRY(const toml::table* t, f.table("tools"));
    if (t) {
      TomlFields g = f.sub(*t, "tools");
      for (const auto& [key, value] : *t) {
        std::string name(key.str());
        const toml::node* n = g.node(name);
        const auto* tt = n->as_table();
        if (!tt) return g.wrong_type(str::printable(name), "a table", *n);
        BERTH_TRY(ToolSpec tool, read_tool(*tt, name, path));
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
      BERTH_TRY(StepSpec s, read_step(*t, i, pf));
      pf.steps.push_back(std::move(s));
    }
  }
  BERTH_CHECK(f.finish());
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
                                          std::shared_ptr<const void>& document) {
  auto docs = std::make_shared<TableDocuments>();
  {
    auto head = parse_toml(text.substr(0, split.head), path);
    if (!head.ok() || head->contains("step")) return std::nullopt;
    docs->head = std::move(*head);
  }
  auto pf = read_root(docs->head, path);
  if (!pf.ok()) return std::nullopt;
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
      auto s = read_step(*(*steps)[0].as_table(), i, *pf);
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

std::optional<std::string> foreach_key_problem(std::string_view name) {
  if (auto p = check_chars(name, "", "[A-Za-z0-9_]")) return p;
  for (std::string_view reserved : {"cores", "gpus", "tasks", "nodes", "in", "out", "param"}) {
    if (name == reserved) return fmt::format("'{}' is reserved for a placeholder", name);
  }
  return std::nullopt;
}

Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path,
                                    std::shared_ptr<const void>& document) {
  if (text.size() > kMaxPipelineFileBytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: larger than {} bytes", path, kMaxPipelineFileBytes));
  }
  if (auto split = split_step_tables(text)) {
    if (auto pf = read_by_table(text, path, *split, nullptr, document)) return std::move(*pf);
  }
  BERTH_TRY(toml::table root, parse_toml(text, path));
  auto kept = std::make_shared<const toml::table>(std::move(root));
  document = kept;
  return read_root(*kept, path);
}

std::optional<PipelineFile> read_step_tables(std::string_view text, const std::string& path,
                                             const TableSpans& split,
                                             const std::vector<size_t>& only,
                                             std::shared_ptr<const void>& document) {
  if (text.size() > kMaxPipelineFileBytes) return std::nullopt;
  return read_by_table(text, path, split, &only, document);
}

Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path) {
  std::shared_ptr<const void> document;
  return parse_pipeline(text, path, document);
}

Result<PipelineFile> read_pipeline(const std::string& path) {
  BERTH_TRY(std::string text, files::read_file(path, kMaxPipelineFileBytes));
  return parse_pipeline(text, path);
}

}  // namespace berth::pipeline
