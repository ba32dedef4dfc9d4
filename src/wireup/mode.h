// Mode: which MPI wire-up a job's ranks get (spec 07 §1). Header-only, so that the
// renderers (place) can ask a launcher for it without linking the servers.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"
#include "util/strings.h"

namespace berth::wireup {

enum class Mode {
  kAuto,  // everything berth or the launcher can give: PMIx and PMI (the default)
  kPmix,  // PMIx only
  kPmi1,  // PMI only; berth's socket serves PMI-1 and PMI-2 alike (spec 07 §3)
  kPmi2,
  kNone,  // no wire-up: each MPI rank starts as a singleton
};

inline const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kAuto:
      return "auto";
    case Mode::kPmix:
      return "pmix";
    case Mode::kPmi1:
      return "pmi1";
    case Mode::kPmi2:
      return "pmi2";
    case Mode::kNone:
      return "none";
  }
  return "auto";
}

// "auto", "pmix", "pmi1", "pmi2", "none"; an error names the choices.
inline Result<Mode> parse_mode(std::string_view text) {
  for (Mode m : {Mode::kAuto, Mode::kPmix, Mode::kPmi1, Mode::kPmi2, Mode::kNone}) {
    if (text == mode_name(m)) return m;
  }
  return fail(Errc::kInvalidInput,
              "'" + str::printable(text) + "' is not a wire-up (auto, pmix, pmi1, pmi2, none)");
}

}  // namespace berth::wireup
