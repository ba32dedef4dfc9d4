#include "cli/exit.h"

#include <cstdio>
#include <string>

namespace berth::cli {

int report(const Error& e) {
  // One line: a newline inside a message (never intended) would split it.
  std::string line = e.message();
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "berth: %s\n", line.c_str());
  switch (e.code()) {
    case Errc::kInvalidInput:
    case Errc::kNotFound:
    case Errc::kIo:
    case Errc::kUnavailable:
    case Errc::kRefused:
    case Errc::kUnsupported:
      return kExitBadInput;
    case Errc::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace berth::cli
