// Say: the one way a floor below the CLI says something it cannot hand up as a value —
// a process guard that could not start (launch/guard.h), a libcrypto that cannot be
// loaded just before the process stops (util/libcrypto.h). The program decides where
// it goes: the CLI prints it on stderr; with nothing set it is not said. Nothing below
// the CLI prints itself.
#pragma once

#include <string>

namespace berth {

enum class SayLevel {
  kWarning,  // berth goes on, doing less than it should
  kFatal,    // the process stops next
};

// Where say() goes; set once by the program, before any thread. Null: nowhere.
using SayFn = void (*)(SayLevel level, const char* text);
void set_say(SayFn fn);

// Hands `text` to the program's SayFn, if any. Safe from any thread.
void say(SayLevel level, const std::string& text);

}  // namespace berth
