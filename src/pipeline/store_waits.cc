// A run's waits for its store (store_waits.h).
#include "pipeline/store_waits.h"

#include <fmt/format.h>

namespace berth::pipeline {

void note_store_waits(const store::PatientStore* patient, const std::string& patience,
                      RunReport& rep) {
  if (patient == nullptr) return;
  store::StoreWaits w = patient->stats();
  rep.store_waits = {w.outages, static_cast<double>(w.waited.count()) / 1000.0, w.gave_up};
  if (w.outages > 0) {
    rep.notices.push_back(fmt::format(
        "the store {} did not answer {} time{}, {:.1f} s in all; the run waited it out",
        patient->describe(), w.outages, w.outages == 1 ? "" : "s", rep.store_waits.waited_s));
  }
  if (w.gave_up > 0) {
    rep.notices.push_back(fmt::format(
        "the store {} did not answer within --store-patience {} ({} operation{} gave up): {}",
        patient->describe(), patience, w.gave_up, w.gave_up == 1 ? "" : "s", w.last_error));
  }
}

}  // namespace berth::pipeline
