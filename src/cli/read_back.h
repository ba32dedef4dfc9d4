// What a pipeline's last run left, read back as text: a step's log and the methods
// paragraph, exactly as `berth log` and `berth methods` print them. Shared by those
// commands and by the Python module (berth.log, berth.methods), so that both answer
// the same from the same record.
#pragma once

#include <string>

#include "util/result.h"

namespace berth::cli {

// The store `berth run PIPELINE` uses when no --store is given: file://<dir>/.berth/store
// beside the pipeline file (spec 05 §6).
std::string pipeline_store_url(const std::string& pipeline);

// The stored output of step `step` in the pipeline's last run (spec 04 §7.3) — or, when
// that run was a targeted one without it, in the earlier runs — its bytes verified: from `store` when given, else the store the run used. `cache` is the run's
// cache directory when it was not beside the pipeline (a worker's). Fails (kNotFound)
// naming the pipeline when it has not run, the step when the run had none or it kept no
// log, the object when the store has lost it.
Result<std::string> step_log(const std::string& pipeline, const std::string& step,
                             const std::string& store, const std::string& cache);

// The methods paragraph (spec 04 §9) of the whole pipeline as its last run (or run `run`,
// berth runs) left it — after a targeted run, with the earlier runs' other steps
// (pipeline::whole_pipeline_steps) — from the step rows in `store` (empty: the store the
// run used). Fails (kNotFound) when the pipeline has not run or the store is not there.
Result<std::string> methods_text(const std::string& pipeline, const std::string& store,
                                 const std::string& run = "");

}  // namespace berth::cli
