// The berth subcommands. main.cc holds the table; each command is a pair of
// functions in its own cmd_<name>.cc: `setup` declares its flags on a CLI11
// subcommand, `run` does the work and returns the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace berth::cli {

struct Command {
  const char* name;
  const char* help;
  // Declares flags; returns the function that runs the command after parsing.
  std::function<std::function<int()>(CLI::App&)> setup;
};

std::function<int()> setup_alloc(CLI::App& app);
std::function<int()> setup_machine(CLI::App& app);
std::function<int()> setup_place(CLI::App& app);
std::function<int()> setup_launch(CLI::App& app);
std::function<int()> setup_run(CLI::App& app);
std::function<int()> setup_report(CLI::App& app);
std::function<int()> setup_methods(CLI::App& app);
std::function<int()> setup_store(CLI::App& app);

}  // namespace berth::cli
