// Verifying a store's objects (spec 05): what `berth store verify` and Python's
// berth.store_verify print and return.
#pragma once

#include <string>
#include <vector>

#include "store/object_store.h"
#include "util/result.h"

namespace berth::pipeline {

// One object checked: its name, and whether it is there with the bytes its name says.
struct VerifiedObject {
  std::string name;
  bool ok = false;
};

struct StoreCheck {
  std::vector<VerifiedObject> objects;  // in the order checked
  size_t bad() const;
};

// Verifies `names`, or when there are none every object a step row of the store names
// (for a directory output its manifest and then every file the manifest names,
// store/tree.h). Reading an object verifies it, so a corrupt copy is moved aside by the
// backend (the next run recomputes it). An object that is missing or corrupt is a bad
// entry, not an error; fails only when the step rows cannot be listed.
Result<StoreCheck> verify_store(store::ObjectStore& store, const std::vector<std::string>& names);

}  // namespace berth::pipeline
