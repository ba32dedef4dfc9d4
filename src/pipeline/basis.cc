// A step's basis (basis.h).
#include "pipeline/basis.h"

#include "pipeline/command.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

// {"name":"text",…} of `pairs`, in their order.
template <typename Pairs, typename TextOf>
std::string object_of(const Pairs& pairs, TextOf text_of) {
  std::string out = "{";
  for (const auto& [name, value] : pairs) {
    if (out.size() > 1) out += ',';
    str::append_json_string(out, name);
    out += ':';
    str::append_json_string(out, text_of(value));
  }
  out += '}';
  return out;
}

}  // namespace

void BasisInputs::input(std::string_view name) {
  if (open_) out_ += "],";
  str::append_json_string(out_, name);
  out_ += ":[";
  open_ = true;
}

void BasisInputs::item(std::string_view text, std::string_view tagged) {
  if (out_.back() != '[') out_ += ',';
  out_ += '[';
  str::append_json_string(out_, text);
  out_ += ',';
  str::append_json_string(out_, tagged);
  out_ += ']';
}

std::string BasisInputs::finish() {
  if (open_) out_ += ']';
  out_ += '}';
  return std::move(out_);
}

std::string basis_tools(const std::vector<std::string>& tools, const ToolVersions& versions) {
  std::string out = "{";
  for (const auto& t : tools) {
    auto v = versions.find(t);
    if (out.size() > 1) out += ',';
    str::append_json_string(out, t);
    out += ':';
    str::append_json_string(out, sha256_hex(v == versions.end() ? "" : v->second).substr(0, 16));
  }
  out += '}';
  return out;
}

std::string step_basis(const Step& step, const StepText& text, std::string_view recipe,
                       std::string_view inputs, std::string_view tools) {
  std::string command;
  str::append_json_string(command, describe_command(text.command));
  std::string recipe_text;
  str::append_json_string(recipe_text, recipe.substr(0, 16));
  // Only params whose text varies from step to step (a template over foreach keys or
  // config, a sweep's): a constant's change is an edit of the file itself, and naming
  // every constant in every step's basis would cost a 10^6-step plan 23 MiB.
  std::string params, config;
  if (!step.table->param_templates.empty()) {
    std::vector<std::pair<std::string_view, std::string_view>> varying;
    for (const auto& [name, t] : step.table->param_templates) {
      auto it = text.params.find(name);
      if (it != text.params.end()) varying.emplace_back(name, it->second.text);
    }
    params = object_of(varying, [](std::string_view v) { return v; });
  }
  if (!step.table->config_used.empty()) {
    config = object_of(step.table->config_used,
                       [](const std::string& v) -> const std::string& { return v; });
  }
  constexpr std::string_view kParts[] = {"{\"command\":", ",\"recipe\":", ",\"inputs\":",
                                         ",\"tools\":",   ",\"params\":", ",\"config\":"};
  const std::string_view values[] = {command, recipe_text, inputs, tools, params, config};
  std::string b;
  size_t size = 1;
  for (size_t k = 0; k < std::size(kParts); ++k) {
    if (k < 4 || !values[k].empty()) size += kParts[k].size() + values[k].size();
  }
  b.reserve(size);
  for (size_t k = 0; k < std::size(kParts); ++k) {
    if (k >= 4 && values[k].empty()) continue;
    b += kParts[k];
    b += values[k];
  }
  b += '}';
  return b;
}

}  // namespace berth::pipeline
