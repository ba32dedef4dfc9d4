// A file input's hash at its stamp (spec 04 §7): the index's answer when the file's
// stamp is unchanged since it was hashed, else its bytes hashed and, when its stamp
// was the same before and after, remembered. The clock is read before the file is
// stamped: a stamp within the racy window of it proves nothing without the bytes
// (index.h).
#pragma once

#include <optional>
#include <string>

#include "pipeline/index.h"
#include "util/clock.h"
#include "util/files.h"
#include "util/result.h"

namespace berth::pipeline {

struct HashedInput {
  std::string hash;                // "sha256:<hex>"
  std::optional<FileStamp> stamp;  // the stamp the hash is of; nullopt: none could be taken
  bool stamped = false;            // the hash is known at that stamp (from the index, or steady)
  bool racy = false;               // that stamp is racy: a later check must read the bytes again
};

// Fails (naming the path) when the file cannot be read. `index` may be null.
Result<HashedInput> hash_input(const std::string& path, Index* index, const Clock& clock);

}  // namespace berth::pipeline
