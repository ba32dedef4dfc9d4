// Step keys (spec 04 §5).
#include "pipeline/key.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "util/sha256.h"

namespace berth::pipeline {
namespace {

// Appends fields as <8-byte big-endian length><bytes> (spec 04 §5.1). With every field
// length-prefixed and every list preceded by its count, no two different steps can
// produce the same byte string by moving text across a field boundary.
class Fields {
 public:
  Fields() { out_.reserve(512); }
  void add(std::string_view field) {
    uint64_t n = field.size();
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (56 - 8 * i)) & 0xff);
    out_.append(len, 8);
    out_.append(field);
  }
  void count(size_t n) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
    add(std::string_view(buf, static_cast<size_t>(end - buf)));
  }
  void word(const Word& w) {
    count(w.size());
    for (const Segment& s : w) {
      switch (s.kind) {
        case Segment::Kind::kText:
          add("text");
          break;
        case Segment::Kind::kInput:
          add("in");
          break;
        case Segment::Kind::kOutput:
          add("out");
          break;
      }
      add(s.value);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

Result<std::string> key_preimage(const Step& step, const InputHashes& inputs,
                                 const ToolVersions& tools) {
  return key_preimage(step, StepText(step), inputs, tools);
}

Result<std::string> key_preimage(const Step& step, const StepText& text,
                                 const InputHashes& inputs, const ToolVersions& tools) {
  Fields f;
  f.add(kKeyFormat);
  // The command: which kind, then each word's segments. Paths are absent by
  // construction: {in.X} is the segment ("in", "X").
  f.add(step.shell ? "run" : "cmd");
  f.count(text.command.size());
  for (const Word& w : text.command) f.word(w);
  f.count(text.env.size());
  for (const auto& [name, value] : text.env) {  // std::map: sorted by name
    f.add(name);
    f.word(value);
  }
  f.count(text.params.size());
  for (const auto& [name, p] : text.params) {
    f.add(name);
    f.add(param_type_name(p.type));
    f.add(p.text);
  }
  f.count(step.inputs.size());
  for (const auto& [name, in] : step.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("step '{}': key: no hash for input '{}'", step.name, name));
    }
    if (it->second.size() != in.items.size()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("step '{}': key: input '{}' has {} items but {} hashes", step.name,
                              name, in.items.size(), it->second.size()));
    }
    f.add(name);
    f.add(in.is_list ? "list" : "one");
    f.count(in.items.size());
    for (size_t k = 0; k < in.items.size(); ++k) {
      const CanonicalHash& h = it->second[k];
      f.add(h.form);
      f.add(h.hash);
      // The name it is staged under: a command may read it (gunzip needs .gz).
      f.add(in.items[k].staged_name());
    }
  }
  // Outputs and their forms: a row records each output's canonical hash, so a key
  // must change when the form that hash is taken under does.
  f.count(step.canonical.size());
  for (const auto& [name, form] : step.canonical) {
    f.add(name);
    f.add(form);
  }
  std::vector<std::string> names = step.tools;
  std::sort(names.begin(), names.end());  // the file's order of tools means nothing
  f.count(names.size());
  for (const std::string& tool : names) {
    auto it = tools.find(tool);
    if (it == tools.end()) {
      return fail(Errc::kInvalidInput,
                  fmt::format("step '{}': key: no version for tool '{}'", step.name, tool));
    }
    f.add(tool);
    f.add(it->second);
  }
  return f.take();
}

Result<std::string> key_of(const Step& step, const InputHashes& inputs, const ToolVersions& tools) {
  return key_of(step, StepText(step), inputs, tools);
}

Result<std::string> key_of(const Step& step, const StepText& text, const InputHashes& inputs,
                           const ToolVersions& tools) {
  BERTH_TRY(std::string pre, key_preimage(step, text, inputs, tools));
  return sha256_hex(pre);
}

std::string step_fingerprint(const Step& step, const Graph& graph, const ToolVersions& tools) {
  InputHashes where;
  for (const auto& [name, input] : step.inputs) {
    auto& list = where[name];
    list.reserve(input.items.size());
    for (const InputItem& item : input.items) {
      if (item.kind == InputItem::Kind::kFile) {
        // The text too: the basis a report gives shows it.
        list.push_back({"file " + item.text, item.path});
      } else {
        if (item.step >= graph.steps.size()) return "";
        list.push_back({"step " + item.text, graph.steps[item.step].name + "/" + item.output});
      }
    }
  }
  auto pre = key_preimage(step, where, tools);
  if (!pre.ok()) return "";
  // Not a key: another format name first, so that no fingerprint is ever some step's
  // key. One context per thread, reused: a run fingerprints every step.
  thread_local Sha256 h;
  h.update("berth.step-fingerprint.v1\n");
  h.update(*pre);
  return h.finish_hex();
}

}  // namespace berth::pipeline
