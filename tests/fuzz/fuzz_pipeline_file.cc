// Fuzzes the pipeline file end to end short of running anything: parse_pipeline,
// expand (every input file "exists"), key_of and render_command for every step. Any
// bytes must give a graph or an Error naming the file on one line — never a crash, a
// hang or an exception escaping toml++ — and a graph must be in topological order.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pipeline/command.h"
#include "pipeline/graph.h"
#include "pipeline/key.h"
#include "pipeline/pipeline_file.h"

namespace {

[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const berth::Error& e) {
  if (e.message().rfind("fuzz.toml", 0) != 0) broken("error names the file", e.message());
  for (char c : e.message()) {
    if (c == '\n' || c == '\r' || c == '\0') broken("one-line message", e.message());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace berth::pipeline;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto pf = parse_pipeline(text, "fuzz.toml");
  if (!pf.ok()) {
    check_error(pf.error());
    return 0;
  }
  auto g = expand(*pf, [](const std::string&) { return true; });
  if (!g.ok()) {
    check_error(g.error());
    return 0;
  }
  ToolVersions tools;
  for (const auto& [name, tool] : g->tools) tools[name] = "v1";
  for (size_t i = 0; i < g->steps.size(); ++i) {
    const Step& s = g->steps[i];
    InputHashes hashes;
    StagedPaths paths;
    for (const auto& [name, in] : s.inputs) {
      for (size_t k = 0; k < in.items.size(); ++k) {
        if (in.items[k].kind == InputItem::Kind::kStepOutput && in.items[k].step >= i) {
          broken("topological order", s.name);
        }
        hashes[name].push_back(berth::pipeline::CanonicalHash{"bytes", "sha256:00"});
        paths.inputs[name].push_back("/stage/in/" + name + "/" + std::to_string(k));
      }
    }
    for (size_t d : s.deps) {
      if (d >= i) broken("deps come first", s.name);
    }
    for (const std::string& o : s.outputs) paths.outputs[o] = "/stage/out/" + o;
    auto key = key_of(s, hashes, tools);
    if (!key.ok()) broken("every expanded step has a key", key.error().message());
    auto rc = render_command(s, paths);
    if (!rc.ok()) {
      // Only a cmd made of nothing but empty list inputs may fail to render.
      if (s.shell) broken("a run step renders", rc.error().message());
    } else if (rc->argv.empty()) {
      broken("argv never empty", s.name);
    }
  }
  return 0;
}
