// The one place an Error becomes text on stderr and an exit status (spec 01 §7).
#pragma once

#include "util/result.h"

namespace berth::cli {

// Exit statuses of every berth command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    // the work itself failed
inline constexpr int kExitBadInput = 2;   // bad input: a flag, variable or file; nothing ran
inline constexpr int kExitInternal = 70;  // a bug in berth (EX_SOFTWARE)

// Prints "berth: <message>" as one line on stderr and returns the exit status.
int report(const Error& e);

}  // namespace berth::cli
