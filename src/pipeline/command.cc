// Command rendering (spec 04 §6).
#include "pipeline/command.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace berth::pipeline {
namespace {

enum class Mode { kShell, kArgv, kEnv };

Result<std::vector<std::string>> paths_of(const Step& step, const StagedPaths& paths,
                                          const std::string& name) {
  auto it = paths.inputs.find(name);
  auto in = step.inputs.find(name);
  if (it == paths.inputs.end() || in == step.inputs.end()) {
    return fail(Errc::kInvalidInput,
                fmt::format("step '{}': no staged path for input '{}'", step.name, name));
  }
  if (it->second.size() != in->second.items.size()) {
    return fail(Errc::kInvalidInput,
                fmt::format("step '{}': input '{}' has {} items but {} staged paths", step.name,
                            name, in->second.items.size(), it->second.size()));
  }
  return it->second;
}

// Renders one word. kArgv may yield several words (a whole-word list input, spec 04
// §3.3: expand() refused a list inside a larger word); the other modes yield one.
Result<std::vector<std::string>> render_word(const Step& step, const Word& w,
                                             const StagedPaths& paths, Mode mode) {
  auto quote = [&](const std::string& p) { return mode == Mode::kShell ? shell_quote(p) : p; };
  if (mode == Mode::kArgv && w.size() == 1 && w[0].kind == Segment::Kind::kInput &&
      step.inputs.count(w[0].value) && step.inputs.at(w[0].value).is_list) {
    return paths_of(step, paths, w[0].value);
  }
  std::string out;
  for (const Segment& s : w) {
    switch (s.kind) {
      case Segment::Kind::kText:
        out += s.value;
        break;
      case Segment::Kind::kInput: {
        BERTH_TRY(std::vector<std::string> ps, paths_of(step, paths, s.value));
        for (size_t i = 0; i < ps.size(); ++i) {
          if (i) out += ' ';
          out += quote(ps[i]);
        }
        break;
      }
      case Segment::Kind::kOutput: {
        auto it = paths.outputs.find(s.value);
        if (it == paths.outputs.end()) {
          return fail(Errc::kInvalidInput,
                      fmt::format("step '{}': no staged path for output '{}'", step.name, s.value));
        }
        out += quote(it->second);
        break;
      }
    }
  }
  return std::vector<std::string>{std::move(out)};
}

}  // namespace

Result<RenderedCommand> render_command(const Step& step, const StagedPaths& paths) {
  RenderedCommand rc;
  rc.shell = step.shell;
  const std::vector<Word> command = step.command();
  if (step.shell) {
    if (command.size() != 1) {
      return fail(Errc::kInternal, fmt::format("step '{}': a run step has one script", step.name));
    }
    BERTH_TRY(std::vector<std::string> script,
              render_word(step, command[0], paths, Mode::kShell));
    rc.argv = {"sh", "-c", std::move(script[0])};
  } else {
    for (const Word& w : command) {
      BERTH_TRY(std::vector<std::string> words, render_word(step, w, paths, Mode::kArgv));
      for (std::string& word : words) rc.argv.push_back(std::move(word));
    }
    if (rc.argv.empty()) {
      return fail(
          Errc::kInvalidInput,
          fmt::format("step '{}': cmd renders to no words (an empty list input?)", step.name));
    }
  }
  for (const auto& [name, value] : step.env()) {
    BERTH_TRY(std::vector<std::string> v, render_word(step, value, paths, Mode::kEnv));
    rc.env.emplace(name, std::move(v[0]));
  }
  return rc;
}

std::string describe_command(const Step& step) { return describe_command(step.command()); }

std::string describe_command(const std::vector<Word>& command) {
  std::vector<std::string> words;
  for (const Word& w : command) {
    std::string out;
    for (const Segment& s : w) {
      switch (s.kind) {
        case Segment::Kind::kText: {
          // Braces are escaped so the text reads back as the template it came from.
          for (char c : s.value) {
            out += c;
            if (c == '{' || c == '}') out += c;
          }
          break;
        }
        case Segment::Kind::kInput:
          out += "{in." + s.value + "}";
          break;
        case Segment::Kind::kOutput:
          out += "{out." + s.value + "}";
          break;
      }
    }
    words.push_back(std::move(out));
  }
  return str::join(words, " ");
}

}  // namespace berth::pipeline
