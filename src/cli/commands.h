// The berth subcommands. main.cc holds the table; each command is a pair of
// functions in its own cmd_<name>.cc: `setup` declares its flags on a CLI11
// subcommand, `run` does the work and returns the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace berth::cli {

struct Command {
  const char* name;
  const char* help;
  // Declares flags; returns the function that runs the command after parsing.
  std::function<std::function<int()>(CLI::App&)> setup;
  // The command takes a program to run after `--` (`berth launch -n 2 -- sh -c …`).
  // main.cc splits the command line at the first `--` before CLI11 sees it — CLI11
  // would otherwise give the words after it to the top-level parser, which refuses
  // them — and hands the tail over through command_tail().
  bool takes_command = false;
};

// The words after the first `--` of the command line, when the chosen subcommand
// takes a command and the line has one; nullopt when it has none.
std::optional<std::vector<std::string>>& command_tail();

std::function<int()> setup_alloc(CLI::App& app);
std::function<int()> setup_machine(CLI::App& app);
std::function<int()> setup_place(CLI::App& app);
std::function<int()> setup_launch(CLI::App& app);
std::function<int()> setup_run(CLI::App& app);
std::function<int()> setup_report(CLI::App& app);
std::function<int()> setup_runs(CLI::App& app);
std::function<int()> setup_log(CLI::App& app);
std::function<int()> setup_status(CLI::App& app);
std::function<int()> setup_methods(CLI::App& app);
std::function<int()> setup_store(CLI::App& app);
std::function<int()> setup_agent(CLI::App& app);

}  // namespace berth::cli
