// Opening the store a URL names (store_url.h).
#include "cli/store_url.h"

#include <fmt/format.h>

#include <filesystem>

#include "store/url.h"
#include "util/env.h"
#include "util/files.h"

namespace berth::cli {

Result<std::unique_ptr<store::ObjectStore>> open_store_url(const std::string& url,
                                                           StoreAbsent absent) {
  return store::open_store_url(url, std::filesystem::current_path().string(),
                               Env::from_process(), absent);
}

}  // namespace berth::cli
