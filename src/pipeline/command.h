// Rendering a step's command for one staging directory (spec 04 §6).
//
// The only place where {in.X} and {out.X} become paths. A `run` step becomes
// `sh -c <script>` with every path shell-quoted (a list input as its paths separated
// by spaces); a `cmd` step becomes its argv with no shell, a list input as one word per
// path. Params and foreach values are inserted verbatim in both: they are the user's
// own text, and a `run` user may mean them to be shell syntax.
#pragma once

#include "util/strings.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeline/graph.h"
#include "util/result.h"

namespace berth::pipeline {

// Where a step's inputs and outputs are in its staging directory: the caller (the
// executor) chooses. Paths must depend only on keyed things (the input's name and item
// index, the output's name), never on the source file's name, so that one key always
// means one command.
struct StagedPaths {
  std::map<std::string, std::vector<std::string>> inputs;  // one path per item
  std::map<std::string, std::string> outputs;
};

struct RenderedCommand {
  bool shell = false;                      // argv is {"sh", "-c", script}
  std::vector<std::string> argv;           // never empty
  std::map<std::string, std::string> env;  // the step's env, expanded
};

// Renders `step` with `paths`. Fails (kInvalidInput) when `paths` lacks an input or
// output the command or env names, or has a number of paths for an input that differs
// from its item count.
Result<RenderedCommand> render_command(const Step& step, const StagedPaths& paths);

// `s` quoted for a POSIX shell (util/strings.h).
using str::shell_quote;

// The command as the file wrote it after expansion, {in.X}/{out.X} left as
// placeholders and a cmd's words joined by spaces: for --dry-run and provenance.
std::string describe_command(const Step& step);
// The same for a command already expanded (Step::command()).
std::string describe_command(const std::vector<Word>& command);

}  // namespace berth::pipeline
