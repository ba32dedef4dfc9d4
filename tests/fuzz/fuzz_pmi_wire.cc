// Fuzzes the PMI wire codec and one job's PMI service (spec 07 §3).
//
// The input is what a rank might write on its PMI socket. It is cut into messages as
// the server cuts it, each decoded and handed to a two-rank job's state. Properties
// checked, abort() on any violation:
//   - framing and decoding never crash, and a failure is kInvalidInput with a
//     "position N: " message;
//   - a decoded message encodes to bytes that frame and decode back to it;
//   - every answer berth sends frames and decodes cleanly itself, and a PMI-1 answer
//     fits the 1023-byte line MPICH's client reads.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "wireup/pmi_job_state.h"
#include "wireup/pmi_wire.h"

namespace pmi = berth::wireup::pmi;

namespace {

[[noreturn]] void broken(const char* what, std::string_view detail) {
  std::fprintf(stderr, "contract broken: %s: %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

void check_error(const berth::Error& e) {
  if (e.code() != berth::Errc::kInvalidInput) broken("error code", e.message());
  if (e.message().rfind("position ", 0) != 0) broken("error names a position", e.message());
}

// `bytes` is one whole message of `wire`; returns it decoded.
pmi::Message must_decode(pmi::Wire wire, const std::string& bytes, const char* what) {
  auto f = pmi::next_frame(bytes);
  if (!f.ok() || !f->has_value() || (*f)->wire != wire || (*f)->size != bytes.size()) {
    broken(what, bytes);
  }
  auto m = pmi::decode(wire, bytes);
  if (!m.ok()) broken(what, m.error().message());
  return *m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  berth::wireup::JobMap map;
  map.id = "berth.1.1";
  map.nodes = {"a", "b"};
  map.procs = {{0, 0, 0, 0}, {1, 1, 0, 0}};
  pmi::JobState state(map);
  int sender = 0;
  while (!in.empty()) {
    auto frame = pmi::next_frame(in);
    if (!frame.ok()) {
      check_error(frame.error());
      return 0;
    }
    if (!frame->has_value()) return 0;
    const pmi::Frame f = **frame;
    if (f.size == 0 || f.size > in.size()) broken("frame size", in.substr(0, 64));
    auto m = pmi::decode(f.wire, in.substr(0, f.size));
    in.remove_prefix(f.size);
    if (!m.ok()) {
      check_error(m.error());
      continue;
    }
    pmi::Message want = *m;
    if (f.wire == pmi::Wire::kPmi2) want.multi_line = false;
    if (!(must_decode(f.wire, pmi::encode(f.wire, *m), "round trip") == want)) {
      broken("round trip", pmi::encode(f.wire, *m));
    }
    pmi::Effects fx;
    state.on_message(sender, f.wire, *m, fx);
    sender = 1 - sender;
    for (const auto& s : fx.sends) {
      if (s.rank < 0 || s.rank > 1) broken("answer to a rank of the job", s.bytes);
      pmi::Wire w = s.bytes.empty() || s.bytes[0] == ' ' || (s.bytes[0] >= '0' && s.bytes[0] <= '9')
                        ? pmi::Wire::kPmi2
                        : pmi::Wire::kPmi1;
      must_decode(w, s.bytes, "answer decodes");
      if (w == pmi::Wire::kPmi1 && s.bytes.size() > pmi::kPmi1ReplyMax) {
        broken("PMI-1 answer fits MPICH's line", s.bytes);
      }
    }
  }
  return 0;
}
