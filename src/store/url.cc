#include "store/url.h"

#include <fmt/format.h>

#include "store/file_store.h"
#include "util/files.h"
#include "store/s3_store.h"
#include "util/strings.h"

namespace berth::store {
namespace {

Failure bad(std::string_view url, std::string_view why) {
  return fail(Errc::kInvalidInput,
              fmt::format("store URL \"{}\": {}", str::printable(url, 120), why));
}

// Folds "//" and "/./", drops a trailing '/'; ".." is left for the OS, which alone
// knows where symbolic links lead.
std::string normalise_path(std::string_view p) {
  std::string out;
  for (std::string_view part : str::split(p, '/')) {
    if (part.empty() || part == ".") continue;
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

// S3 bucket naming rules: 3-63 of [a-z0-9.-], starting and ending alphanumeric.
bool valid_bucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || str::is_digit(c) || c == '.' || c == '-')) return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || str::is_digit(c); };
  return alnum(b.front()) && alnum(b.back());
}

}  // namespace

std::string StoreUrl::to_string() const {
  if (scheme == Scheme::kFile) return "file://" + path;
  return prefix.empty() ? "s3://" + bucket : "s3://" + bucket + "/" + prefix;
}

Result<StoreUrl> parse_store_url(std::string_view url, std::string_view base_dir) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return bad(url, "contains a control character");
    }
  }
  if (url.find_first_of("?#") != std::string_view::npos) {
    return bad(url, "'?' and '#' (query, fragment) are not supported");
  }
  StoreUrl u;
  if (url.substr(0, 7) == "file://") {
    std::string_view rest = url.substr(7);
    if (rest.empty()) return bad(url, "no directory after file://");
    if (rest.front() == '/') {
      u.path = normalise_path(rest);
    } else {
      if (base_dir.empty()) {
        return bad(url, "a relative directory needs a base directory; write file:///abs/dir");
      }
      if (base_dir.front() != '/') return bad(url, "the base directory is not absolute");
      u.path = normalise_path(std::string(base_dir) + "/" + std::string(rest));
    }
    if (u.path == "/") return bad(url, "refusing the root directory as a store");
    return u;
  }
  if (url.substr(0, 5) == "s3://") {
    std::string_view rest = url.substr(5);
    size_t slash = rest.find('/');
    std::string_view bucket = rest.substr(0, slash);
    if (!valid_bucket(bucket)) {
      return bad(url,
                 "bucket must be 3-63 of [a-z0-9.-], starting and ending with a letter "
                 "or digit");
    }
    u.scheme = StoreUrl::Scheme::kS3;
    u.bucket = std::string(bucket);
    if (slash != std::string_view::npos) {
      std::string_view prefix = rest.substr(slash + 1);
      while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
      if (!prefix.empty()) {
        for (std::string_view part : str::split(prefix, '/')) {
          if (part.empty() || part == "." || part == "..") {
            return bad(url, "the prefix has an empty, '.' or '..' component");
          }
        }
      }
      u.prefix = std::string(prefix);
    }
    return u;
  }
  size_t colon = url.find("://");
  if (colon != std::string_view::npos) {
    return bad(url, fmt::format("unknown scheme \"{}\"; expected file:// or s3://",
                                str::printable(url.substr(0, colon), 20)));
  }
  return bad(url, "expected file:///dir or s3://bucket/prefix");
}

Result<std::unique_ptr<ObjectStore>> open_store(const StoreUrl& url, const Env& env) {
  if (url.scheme == StoreUrl::Scheme::kS3) {
    // Credentials, region and endpoint come from `env` (spec 05 §8).
    BERTH_TRY(S3Config config, S3Config::from_env(url.bucket, url.prefix, env));
    BERTH_TRY(auto s3, S3Store::open(std::move(config)));
    return std::unique_ptr<ObjectStore>(std::move(s3));
  }
  BERTH_TRY(auto fs, FileStore::open(url.path));
  return std::unique_ptr<ObjectStore>(std::move(fs));
}

Result<std::unique_ptr<ObjectStore>> open_store_url(std::string_view url,
                                                    std::string_view base_dir, const Env& env,
                                                    StoreAbsent absent) {
  BERTH_TRY(StoreUrl u, parse_store_url(url, base_dir));
  // A file store is one once its FORMAT file is published (spec 05 §2): a directory
  // without it, or no directory, is no store yet. (An s3:// bucket is never created:
  // one that is not there fails at the first request.)
  if (absent == StoreAbsent::kRefuse && u.scheme == StoreUrl::Scheme::kFile &&
      !files::exists(u.path + "/FORMAT")) {
    return fail(Errc::kNotFound,
                fmt::format("{}: no berth store there (nothing was created; `berth run` makes "
                            "the store it names, `berth store put` too)",
                            url));
  }
  return open_store(u, env);
}

}  // namespace berth::store
