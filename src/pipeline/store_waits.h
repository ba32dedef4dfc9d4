// A run's waits for its store, said in its report (spec 05 §9): the outages it waited
// out and the operations that gave up past --store-patience.
#pragma once

#include <string>

#include "pipeline/report.h"
#include "store/patient_store.h"

namespace berth::pipeline {

// Sets `rep.store_waits` from `patient`'s stats and adds a notice for the outages waited
// out and one for the operations that gave up (`patience`: the --store-patience text).
// Nothing when `patient` is null (a store handed in, used as it is).
void note_store_waits(const store::PatientStore* patient, const std::string& patience,
                      RunReport& rep);

}  // namespace berth::pipeline
