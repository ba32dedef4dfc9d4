#include "util/result.h"

namespace berth {

const char* errc_name(Errc code) {
  switch (code) {
    case Errc::kInvalidInput: return "invalid-input";
    case Errc::kNotFound: return "not-found";
    case Errc::kIo: return "io";
    case Errc::kUnavailable: return "unavailable";
    case Errc::kRefused: return "refused";
    case Errc::kUnsupported: return "unsupported";
    case Errc::kInternal: return "internal";
  }
  return "internal";
}

}  // namespace berth
