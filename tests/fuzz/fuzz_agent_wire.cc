// Fuzzes the agents' wire (spec 08 §3): what a run reads from its launcher's stdout
// is every agent's output merged, and anything a node printed; what an agent reads is
// the run's requests. Each input is lines: each is fed to the unframer, and every whole
// message (and every line itself) is read as a request's job, an exit's outcome and a
// hello's node offer.
//
// Properties checked, abort() on any violation:
//   - nothing crashes, throws or runs away, whatever the bytes;
//   - a job, an outcome or an offer that is accepted, written back, reads the same;
//   - framing any message gives lines of at most kMaxLine bytes that join back to it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launch/agent_wire.h"
#include "place/node_offer.h"

namespace {

using namespace berth;
using json = nlohmann::json;

void read_as_everything(std::string_view text) {
  auto m = launch::agent::parse_message(text, "fuzz");
  if (!m.ok()) return;
  for (const char* key : {"job", "outcome", "offer"}) {
    const json& j = m->contains(key) ? m->at(key) : *m;
    if (auto job = launch::agent::job_from_json(j); job.ok()) {
      json once = launch::agent::job_to_json(*job);
      auto again = launch::agent::job_from_json(once);
      if (!again.ok() || launch::agent::job_to_json(*again) != once) abort();
    }
    if (auto o = launch::agent::outcome_from_json(j); o.ok()) {
      json once = launch::agent::outcome_to_json(*o);
      auto again = launch::agent::outcome_from_json(once);
      if (!again.ok() || launch::agent::outcome_to_json(*again) != once) abort();
    }
    if (auto o = place::offer_from_json(j); o.ok()) {
      json once = place::offer_to_json(*o);
      auto again = place::offer_from_json(once);
      if (!again.ok() || place::offer_to_json(*again) != once) abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  launch::agent::Unframer u;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    auto fed = u.feed(line);
    if (fed.message) read_as_everything(fed.message->text);
    read_as_everything(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  // Framing: every line fits, and the parts join back.
  auto lines = launch::agent::frame("n1", text.substr(0, text.find('\n')));
  launch::agent::Unframer back;
  std::string joined;
  for (auto& l : lines) {
    if (l.size() > launch::agent::kMaxLine || l.back() != '\n') abort();
    l.pop_back();
    if (auto fed = back.feed(l); fed.message) joined = fed.message->text;
  }
  if (joined != text.substr(0, text.find('\n'))) abort();
  return 0;
}
