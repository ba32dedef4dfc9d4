// Store URLs: how a user names a store (`--store URL`), and opening one (spec 05 §6).
//
//   file:///abs/dir        a FileStore in /abs/dir
//   file://rel/dir         a FileStore in rel/dir relative to the caller's base
//                          directory (the CLI passes the directory of the pipeline file
//                          or the working directory); refused when no base is given
//   s3://bucket[/prefix]   an S3Store over HTTP with SigV4; credentials, region and
//                          endpoint from the environment (s3_store.h, spec 05 §8)
//
// Anything else — another scheme, a bare path, an empty path, a query or fragment,
// control characters — is kInvalidInput naming the URL. No percent-decoding is done:
// '%' is an ordinary path character.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "store/object_store.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::store {

struct StoreUrl {
  enum class Scheme { kFile, kS3 };
  Scheme scheme = Scheme::kFile;
  std::string path;    // kFile: absolute, normalised ("//" and "/./" folded, no trailing '/')
  std::string bucket;  // kS3
  std::string prefix;  // kS3: "" or "a/b" (no leading or trailing '/')

  // The URL written back in normal form: "file:///abs", "s3://bucket/prefix".
  std::string to_string() const;
};

// Parses `url`. `base_dir` resolves a relative file:// path; it must be absolute or
// empty (then a relative path is refused).
Result<StoreUrl> parse_store_url(std::string_view url, std::string_view base_dir = {});

// Opens the store `url` names: a FileStore (created when missing) for file://; an
// S3Store for s3://, configured from `env` (credentials, endpoint, region: s3_store.h).
Result<std::unique_ptr<ObjectStore>> open_store(const StoreUrl& url, const Env& env);

// What opening a store that is not there does. Only `berth run` and `berth store put`
// make a store; every other reader takes a store that is not there — a mistyped path —
// as an error that names it, with nothing created, never as an empty store.
enum class StoreAbsent {
  kRefuse,  // fail (kNotFound), creating nothing
  kCreate,  // make it, as `berth run` does
};

// parse_store_url() then open_store(), a file:// store that is not there (no FORMAT,
// spec 05 §2) refused or made as `absent` says.
Result<std::unique_ptr<ObjectStore>> open_store_url(std::string_view url,
                                                    std::string_view base_dir, const Env& env,
                                                    StoreAbsent absent);

}  // namespace berth::store
