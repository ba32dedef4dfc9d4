// The pipeline file parser: TOML (toml++) into a PipelineFile (spec 04 §1–§2).
//
// toml++ reports syntax errors by throwing toml::parse_error; parse_pipeline() is the
// only place in this library that lets it throw, and nothing escapes it (STYLE:
// libraries return values).
#include "pipeline/pipeline_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "pipeline/canonical.h"
#include "util/env.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

constexpr size_t kMaxStringBytes = 64 * 1024;
constexpr size_t kMaxArrayItems = 1 << 16;

const char* type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date or time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

SourcePos pos_of(const toml::node& n) {
  const auto& b = n.source().begin;
  return SourcePos{b.line, b.column};
}

// One TOML table being read. Every key taken is remembered, so that finish() can
// report any key nobody asked for, by its full dotted name. Messages read
// "file:line:col: <context>: <key>: <what>" (spec 04 §2).
class Fields {
 public:
  Fields(const toml::table& t, std::string context, std::string prefix, const std::string& file)
      : t_(t), context_(std::move(context)), prefix_(std::move(prefix)), file_(file) {}

  std::string key(std::string_view k) const {
    return prefix_.empty() ? std::string(k) : prefix_ + "." + std::string(k);
  }
  Failure error(const toml::node* at, std::string_view k, std::string_view what) const {
    SourcePos p = pos_of(at ? *at : static_cast<const toml::node&>(t_));
    std::string where = p.line ? fmt::format("{}:{}:{}", file_, p.line, p.column) : file_;
    std::string ctx = context_.empty() ? "" : context_ + ": ";
    std::string name = k.empty() ? prefix_ : key(k);
    return fail(Errc::kInvalidInput,
                fmt::format("{}: {}{}{}", where, ctx, name.empty() ? "" : name + ": ", what));
  }
  Failure wrong_type(std::string_view k, std::string_view want, const toml::node& n) const {
    return error(&n, k, fmt::format("must be {}, not {}", want, type_name(n.type())));
  }

  const toml::node* node(std::string_view k) {
    seen_.insert(std::string(k));
    return t_.get(k);
  }

  Result<std::optional<std::string>> string(std::string_view k) {
    const toml::node* n = node(k);
    if (!n) return std::optional<std::string>();
    BERTH_TRY(std::string s, string_of(n, k));
    return std::optional<std::string>(std::move(s));
  }
  Result<std::string> string_of(const toml::node* n, std::string_view k) const {
    const auto* s = n->as_string();
    if (!s) return wrong_type(k, "a string", *n);
    if (s->get().size() > kMaxStringBytes) {
      return error(n, k, fmt::format("longer than {} bytes", kMaxStringBytes));
    }
    return s->get();
  }

  // An array of strings; `allow_empty` false makes [] an error.
  Result<std::optional<std::vector<std::string>>> strings(std::string_view k, bool allow_empty) {
    const toml::node* n = node(k);
    if (!n) return std::optional<std::vector<std::string>>();
    BERTH_TRY(std::vector<std::string> v, strings_of(n, k, allow_empty));
    return std::optional<std::vector<std::string>>(std::move(v));
  }
  Result<std::vector<std::string>> strings_of(const toml::node* n, std::string_view k,
                                              bool allow_empty) const {
    const auto* a = n->as_array();
    if (!a) return wrong_type(k, "an array of strings", *n);
    if (a->size() > kMaxArrayItems) {
      return error(n, k, fmt::format("more than {} items", kMaxArrayItems));
    }
    if (a->empty() && !allow_empty) return error(n, k, "must not be empty");
    std::vector<std::string> out;
    for (const toml::node& item : *a) {
      if (!item.is_string())
        return error(&item, k,
                     fmt::format("items must be strings, not {}", type_name(item.type())));
      BERTH_TRY(std::string s, string_of(&item, k));
      out.push_back(std::move(s));
    }
    return out;
  }

  Result<std::optional<int64_t>> integer(std::string_view k, int64_t min, int64_t max) {
    const toml::node* n = node(k);
    if (!n) return std::optional<int64_t>();
    const auto* i = n->as_integer();
    if (!i) return wrong_type(k, "an integer", *n);
    int64_t v = i->get();
    if (v < min || v > max) {
      return error(n, k, fmt::format("{} is out of range [{}, {}]", v, min, max));
    }
    return std::optional<int64_t>(v);
  }

  Result<const toml::table*> table(std::string_view k) {
    const toml::node* n = node(k);
    if (!n) return static_cast<const toml::table*>(nullptr);
    const auto* t = n->as_table();
    if (!t) return wrong_type(k, "a table", *n);
    return t;
  }

  Fields sub(const toml::table& t, std::string_view k) const {
    return Fields(t, context_, key(k), file_);
  }

  // Every key of the table that nobody read is an error: a misspelt key would
  // otherwise be a silently ignored setting (spec 04 §2).
  Result<void> finish() const {
    for (const auto& [k, v] : t_) {
      if (!seen_.count(std::string(k.str()))) {
        return error(&v, str::printable(k.str()), "unknown key");
      }
    }
    return Ok{};
  }

  const toml::table& raw() const { return t_; }

 private:
  const toml::table& t_;
  std::string context_;
  std::string prefix_;
  const std::string& file_;
  std::set<std::string> seen_;
};

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

Result<Param> param_of(const Fields& f, const toml::node& n, std::string_view k) {
  if (const auto* s = n.as_string()) {
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

Result<void> read_foreach(Fields& f, StepSpec& s) {
  BERTH_TRY(const toml::table* t, f.table("foreach"));
  if (!t) return Ok{};
  Fields g = f.sub(*t, "foreach");
  for (const auto& [key, value] : *t) {
    std::string k(key.str());
    const toml::node* n = g.node(k);
    if (auto problem = foreach_key_problem(k)) return g.error(n, str::printable(k), *problem);
    const auto* a = n->as_array();
    if (!a) return g.wrong_type(k, "an array of strings or integers", *n);
    if (a->empty()) return g.error(n, k, "must not be empty");
    if (a->size() > kMaxArrayItems) {
      return g.error(n, k, fmt::format("more than {} items", kMaxArrayItems));
    }
    std::vector<std::string> values;
    for (const toml::node& item : *a) {
      if (const auto* i = item.as_integer()) {
        values.push_back(std::to_string(i->get()));
      } else if (item.is_string()) {
        BERTH_TRY(std::string v, g.string_of(&item, k));
        values.push_back(std::move(v));
      } else {
        return g.error(
            &item, k,
            fmt::format("items must be strings or integers, not {}", type_name(item.type())));
      }
    }
    s.foreach.emplace(k, std::move(values));
  }
  return Ok{};
}

Result<void> read_inputs(Fields& f, StepSpec& s) {
  BERTH_TRY(const toml::table* t, f.table("inputs"));
  if (!t) return Ok{};
  Fields g = f.sub(*t, "inputs");
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

Result<void> read_params(Fields& f, StepSpec& s) {
  BERTH_TRY(const toml::table* t, f.table("params"));
  if (!t) return Ok{};
  Fields g = f.sub(*t, "params");
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
Result<std::map<std::string, std::string>> string_table(Fields& f, std::string_view k,
                                                        bool env_names) {
  std::map<std::string, std::string> out;
  BERTH_TRY(const toml::table* t, f.table(k));
  if (!t) return out;
  Fields g = f.sub(*t, k);
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
    Fields pre(t, fmt::format("step #{}", index + 1), "", pf.path);
    const toml::node* n = t.get("name");
    if (!n) return pre.error(nullptr, "name", "missing");
    BERTH_TRY(std::string name, pre.string_of(n, "name"));
    if (name.empty()) return pre.error(n, "name", "must not be empty");
    s.name = std::move(name);
  }
  Fields f(t, fmt::format("step '{}'", str::printable(s.name)), "", pf.path);
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
  Fields f(t, "", "tools." + str::printable(name), file);
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

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Result<PipelineFile> read_root(const toml::table& root, const std::string& path) {
  PipelineFile pf;
  pf.path = path;
  pf.dir = dir_of(path);
  pf.name = stem_of(path);
  Fields f(root, "", "", path);
  {
    BERTH_TRY(const toml::table* t, f.table("pipeline"));
    if (t) {
      Fields g = f.sub(*t, "pipeline");
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
      Fields g = f.sub(*t, "tools");
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

}  // namespace

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

Result<PipelineFile> parse_pipeline(std::string_view text, const std::string& path) {
  if (text.size() > kMaxPipelineFileBytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: larger than {} bytes", path, kMaxPipelineFileBytes));
  }
  try {
    toml::table root = toml::parse(text, std::string_view(path));
    return read_root(root, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return fail(Errc::kInvalidInput, fmt::format("{}:{}:{}: {}", path, where.line, where.column,
                                                 str::printable(e.description(), 200)));
  } catch (const std::exception& e) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: cannot be read: {}", path, str::printable(e.what(), 200)));
  }
}

Result<PipelineFile> read_pipeline(const std::string& path) {
  BERTH_TRY(std::string text, files::read_file(path, kMaxPipelineFileBytes));
  return parse_pipeline(text, path);
}

}  // namespace berth::pipeline
