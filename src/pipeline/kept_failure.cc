// Kept failures (kept_failure.h).
#include "pipeline/kept_failure.h"

#include <fmt/format.h>
#include <stdio.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipeline/command.h"
#include "util/files.h"

namespace berth::pipeline {

namespace fs = std::filesystem;

std::string rebase_paths(std::string_view text, const std::string& stage, std::string_view to) {
  // Only "<stage>/..." is a path below it: "<stage>7/" is another step's directory.
  const std::string from = stage + "/";
  const std::string with = to.empty() ? std::string() : std::string(to) + "/";
  std::string out;
  size_t at = 0;
  for (size_t hit = text.find(from); hit != std::string_view::npos; hit = text.find(from, at)) {
    out.append(text.substr(at, hit - at));
    out += with;
    at = hit + from.size();
  }
  out.append(text.substr(at));
  return out;
}

std::string rerun_script(const FailedStep& f) {
  // `env -i` and the env file: the step's environment exactly, not the caller's with
  // the step's added. The command is the argument list as launched, each word quoted,
  // so that a `run` step's script is the very text its `sh -c` got.
  std::string words;
  for (const std::string& w : f.argv) words += " " + shell_quote(w);
  return fmt::format(
      "#!/bin/sh\n"
      "# Step '{}' as berth ran it, in this directory: its inputs in in/, its outputs\n"
      "# to out/, its environment from ./env. It exited with status {} (exit-status);\n"
      "# its output is in ./output. Run it from anywhere: it changes to this directory.\n"
      "cd \"$(dirname \"$0\")\" || exit 125\n"
      "exec env -i /bin/sh -c '. ./env && exec \"$@\"' command.sh{}\n",
      f.name, f.exit_code, words);
}

namespace {

// The environment as lines a POSIX shell sources.
std::string env_text(const Env& env) {
  std::string out;
  for (const auto& [name, value] : env.vars()) {
    // A name no shell can set (an exported bash function's) cannot be reproduced so.
    if (!Env::valid_name(name)) continue;
    out += fmt::format("export {}={}\n", name, shell_quote(value));
  }
  return out;
}

}  // namespace

Result<std::string> keep_failed_step(const FailedStep& f, const std::string& root) {
  const std::string kept = root + "/" + f.name;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot create {}: {}", root, ec.message()));
  // The step's last failure replaces the one kept before it: one directory per step.
  fs::remove_all(kept, ec);
  if (ec) return fail(Errc::kIo, fmt::format("cannot remove {}: {}", kept, ec.message()));
  if (::rename(f.stage.c_str(), kept.c_str()) != 0) {
    return fail(Errc::kIo,
                fmt::format("cannot move {} to {}: {}", f.stage, kept, std::strerror(errno)));
  }
  FailedStep moved = f;
  for (std::string& w : moved.argv) w = rebase_paths(w, f.stage, ".");
  Env env;
  for (const auto& [name, value] : f.env.vars()) env.set(name, rebase_paths(value, f.stage, "."));
  const std::pair<const char*, std::string> files[] = {
      {"command.sh", rerun_script(moved)},
      {"env", env_text(env)},
      {"exit-status", std::to_string(f.exit_code) + "\n"},
      {"output", f.output},
  };
  for (const auto& [name, text] : files) {
    unsigned mode = std::string_view(name) == "command.sh" ? 0755 : 0644;
    BERTH_CHECK(files::write_file_atomic(kept + "/" + name, text, false, mode));
  }
  return kept;
}

}  // namespace berth::pipeline
