// Fuzzes store::parse_store_url (spec 05 §6).
//
// Properties checked, abort() on any violation:
//   - parsing never crashes; a failure is kInvalidInput naming "store URL";
//   - a parsed URL writes back (to_string) to a URL that parses to the same thing;
//   - a file:// result is absolute, and an s3:// result has a non-empty bucket.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The first byte picks whether a base directory is given, so both paths are reached.
  std::string_view base = (size > 0 && data[0] % 2 == 0) ? "/base/dir" : "";
  auto u = berth::store::parse_store_url(text, base);
  if (!u.ok()) {
    if (u.error().code() != berth::Errc::kInvalidInput) abort();
    if (u.error().message().rfind("store URL ", 0) != 0) abort();
    return 0;
  }
  using Scheme = berth::store::StoreUrl::Scheme;
  if (u->scheme == Scheme::kFile && (u->path.empty() || u->path[0] != '/')) abort();
  if (u->scheme == Scheme::kS3 && u->bucket.empty()) abort();
  auto again = berth::store::parse_store_url(u->to_string());
  if (!again.ok() || again->to_string() != u->to_string() || again->path != u->path ||
      again->bucket != u->bucket || again->prefix != u->prefix) {
    abort();
  }
  return 0;
}
