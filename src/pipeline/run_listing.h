// What `berth run` prints about its steps on stdout (spec 04 §7): a line for each step
// worth one — state, name, reason — its reason said once (never repeating the state
// the line begins with), and the summary line of counts.
//
// A dry run lists every step. Past kMostStepLines of them, and unless every step is
// asked for (`--every-step`), it is summarised per step template instead: how many of
// its steps would run, are cached, and so on, with one example line, and a last line
// saying how to see each. With `--commands` a dry run lists each would-run step's
// command (dry_run.h) as `NAME: COMMAND`, every one of them, as `make -n` does, and
// still a line for each step that was refused, failed or skipped.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/report.h"

namespace berth::pipeline {

// The most step lines a dry run prints before it summarises them per template.
inline constexpr size_t kMostStepLines = 50;

struct ListingOptions {
  bool dry_run = false;     // every step listed (else only failed, refused, skipped)
  bool every_step = false;  // never summarised
  bool commands = false;    // would-run steps as NAME: COMMAND (a dry run's)
  // Said after a step's reason ("; its output: berth log …"); null: nothing.
  std::function<std::string(const StepRecord&)> hint;
};

// `s`'s reason without a leading "<its state>: " ("cached: the store has…" on a
// cached step's line says "the store has…").
std::string_view reason_once(const StepRecord& s);

// "failed    sim-3: exited with status 1" + hint: the state padded to 9 columns.
std::string step_line(const StepRecord& s, std::string_view hint = {});

// The lines for `r`'s steps, as `o` asks, each without its newline.
std::vector<std::string> step_lines(const RunReport& r, const ListingOptions& o);

// "5 step(s): 2 executed, 3 cached, 0 failed, 0 skipped, 0 refused in 0.41 s"; a dry
// run's says "N would run" first, and nothing executed.
std::string summary_line(const RunReport& r);

}  // namespace berth::pipeline
