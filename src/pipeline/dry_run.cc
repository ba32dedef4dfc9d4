// A dry run's templates and commands (dry_run.h).
#include "pipeline/dry_run.h"

#include <cstdint>
#include <map>
#include <vector>

#include "pipeline/beside.h"
#include "pipeline/command.h"
#include "pipeline/staging.h"
#include "store/memory_store.h"
#include "store/url.h"
#include "util/files.h"

namespace berth::pipeline {

std::string dry_run_command(const Step& s) {
  // Where the runner stages each input and output (launch_runner.cc), relative to the
  // staging directory rather than under it: the step's working directory is that one.
  StagedPaths paths;
  const auto layout = staged_layout(s.inputs);
  for (const auto& [name, input] : s.inputs) {
    const std::string beside = beside_path_of(name);
    for (size_t k = 0; k < input.items.size(); ++k) {
      paths.inputs[name].push_back(beside.empty() ? layout.at(name)[k] : beside);
    }
  }
  for (const std::string& out : s.outputs) paths.outputs[out] = "out/" + out;
  auto cmd = render_command(s, paths);
  if (!cmd.ok()) return "cannot be rendered: " + cmd.error().message();
  std::string line;
  for (const auto& [var, value] : cmd->env) line += var + "=" + shell_quote(value) + " ";
  if (cmd->shell && line.empty()) return cmd->argv[2];
  for (size_t k = 0; k < cmd->argv.size(); ++k) {
    if (k) line += ' ';
    line += shell_quote(cmd->argv[k]);
  }
  return line;
}

void describe_dry_run(const Graph& g, bool commands, RunReport& rep) {
  // One name per table, numbered in the order they are first met (graph order).
  std::map<const StepTable*, uint32_t> number;
  rep.templates.clear();
  rep.template_of.assign(rep.steps.size(), 0);
  for (size_t i = 0; i < rep.steps.size() && i < g.steps.size(); ++i) {
    const Step& s = g.steps[i];
    auto [it, added] = number.emplace(s.table.get(), static_cast<uint32_t>(rep.templates.size()));
    if (added)
      rep.templates.push_back(s.table->name_template.empty() ? s.name : s.table->name_template);
    rep.template_of[i] = it->second;
    if (commands && rep.steps[i].state == StepState::kWouldRun && !s.from_record) {
      rep.steps[i].command = dry_run_command(s);
    }
  }
}

std::unique_ptr<store::ObjectStore> dry_run_store(const std::string& url, const std::string& cwd) {
  auto u = store::parse_store_url(url, cwd);
  if (!u.ok() || u->scheme != store::StoreUrl::Scheme::kFile) return nullptr;
  if (files::exists(u->path + "/FORMAT")) return nullptr;
  return std::make_unique<store::MemoryStore>();
}

}  // namespace berth::pipeline
