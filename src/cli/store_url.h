// The store a URL names, opened with the process's environment (AWS_* for s3://):
// what `berth store`, `berth methods` share.
#pragma once

#include <memory>
#include <string>

#include "store/object_store.h"
#include "util/result.h"

namespace berth::cli {

Result<std::unique_ptr<store::ObjectStore>> open_store_url(const std::string& url);

}  // namespace berth::cli
