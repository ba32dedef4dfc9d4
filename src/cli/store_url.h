// The store a URL names, opened with the process's environment (AWS_* for s3://):
// what `berth store`, `berth methods` and `berth log` share.
//
// Only `berth run` and `berth store put` make a store that is not there yet; every other
// command reads one, and a store that is not there — a mistyped path — is an error
// that names it, with nothing created, rather than an empty store that reports success.
#pragma once

#include <memory>
#include <string>

#include "store/object_store.h"
#include "store/url.h"
#include "util/result.h"

namespace berth::cli {

using store::StoreAbsent;

// store::open_store_url() relative to the working directory, with the process's
// environment.
Result<std::unique_ptr<store::ObjectStore>> open_store_url(
    const std::string& url, StoreAbsent absent = StoreAbsent::kRefuse);

}  // namespace berth::cli
