// A [[step]]'s `foreach`, read from its TOML (spec 04 §3.1). Three forms:
//
//   foreach = { lr = [0.1, 0.01], seed = [1, 2] }       # the grid: every combination
//   foreach = [{ lr = 0.1, steps = 100 },                # combinations written out,
//              { lr = 0.01, steps = 200 }]               #   each table one step
//   foreach = "sweep.csv"                                # one step per row of a table
//
// and in the grid a key's values may be found among files ({ glob = "…" }, discover.h).
// Items are strings, integers, floats or booleans, each with one text (toml_param.h):
// `0.10` and `0.1` are one value.
#pragma once

#include "pipeline/pipeline_file.h"
#include "util/result.h"
#include "util/toml_fields.h"

namespace berth::pipeline {

// Reads `f`'s "foreach" key into `s` (foreach, foreach_globs, foreach_rows,
// foreach_table). Fails (kInvalidInput, through `f`: file:line:col, the step, the key)
// on a key that is not a valid foreach key, an empty array, an item that is not a
// scalar, combination tables that do not all hold the same keys, or more values than a
// table may expand to.
Result<void> read_foreach(TomlFields& f, StepSpec& s);

}  // namespace berth::pipeline
