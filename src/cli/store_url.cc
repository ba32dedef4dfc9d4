#include "cli/store_url.h"

#include <filesystem>

#include "store/url.h"
#include "util/env.h"

namespace berth::cli {

Result<std::unique_ptr<store::ObjectStore>> open_store_url(const std::string& url) {
  BERTH_TRY(store::StoreUrl u,
            store::parse_store_url(url, std::filesystem::current_path().string()));
  return store::open_store(u, Env::from_process());
}

}  // namespace berth::cli
