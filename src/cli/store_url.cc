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
  BERTH_TRY(store::StoreUrl u,
            store::parse_store_url(url, std::filesystem::current_path().string()));
  // A file store is one once its FORMAT file is published (spec 05 §2): a directory
  // without it, or no directory, is no store yet. (An s3:// bucket is never created:
  // one that is not there fails at the first request.)
  if (absent == StoreAbsent::kRefuse && u.scheme == store::StoreUrl::Scheme::kFile &&
      !files::exists(u.path + "/FORMAT")) {
    return fail(Errc::kNotFound,
                fmt::format("{}: no berth store there (nothing was created; `berth run` makes "
                            "the store it names, `berth store put` too)",
                            url));
  }
  return store::open_store(u, Env::from_process());
}

}  // namespace berth::cli
