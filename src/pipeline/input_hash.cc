// A file input's hash at its stamp (input_hash.h).
#include "pipeline/input_hash.h"

#include "util/sha256.h"

namespace berth::pipeline {

Result<HashedInput> hash_input(const std::string& path, Index* index, const Clock& clock) {
  HashedInput out;
  const int64_t verified = wall_ns(clock.wall());
  if (auto st = FileStamp::of(path); st.ok()) {
    out.stamp = *st;
    if (index) {
      if (auto known = index->file_hash(path, *st)) {
        out.hash = std::move(*known);
        out.stamped = true;
        return out;
      }
    }
  }
  BERTH_TRY(out.hash, sha256_file(path));
  if (out.stamp) {
    if (auto after = FileStamp::of(path); after.ok() && *after == *out.stamp) {
      if (index) index->remember_file(path, *out.stamp, out.hash, verified);
      out.stamped = true;
      out.racy = stamp_is_racy(*out.stamp, verified);
    }
  }
  return out;
}

}  // namespace berth::pipeline
