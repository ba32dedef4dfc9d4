// Hints for a command line CLI11 refused: an unknown subcommand or flag said with the
// closest one that exists, as git says "did you mean", so `berth run p.toml --dryrun`
// points at --dry-run instead of only refusing it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace berth::cli {

// The message for `e`, thrown parsing `app`, when a word nobody took is close to
// a subcommand or flag of the subcommand it was given to: "berth run: --dryrun is not a
// flag (did you mean '--dry-run'?)". "" when there is nothing to add (CLI11's own
// message then stands).
std::string flag_hint(const CLI::App& app, const CLI::ParseError& e);

}  // namespace berth::cli
