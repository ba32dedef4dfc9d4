#include "store/sigv4.h"

#include <algorithm>
#include <ctime>
#include <new>

#include "util/libcrypto.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::store::sigv4 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

bool unreserved(char c) { return str::is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }

// Trimmed, with every run of spaces inside folded to one (the canonical header value).
std::string fold_spaces(std::string_view v) {
  v = str::trim(v);
  std::string out;
  out.reserve(v.size());
  bool in_space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out += ' ';
    in_space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string amz_date(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  size_t n = std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buf, n);
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += c;
    } else {
      auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

std::string canonical_uri(std::string_view path) {
  // S3 is the one service whose path is encoded once and never normalised: a key
  // "a//b" or "a/./b" is that key, not "a/b".
  return path.empty() ? "/" : uri_encode(path, true);
}

std::string canonical_query(const Pairs& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(uri_encode(k, false), uri_encode(v, false));
  // Sorted by the encoded name (bytewise), then value.
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (libcrypto().HMAC(libcrypto().EVP_sha256(), key.data(), static_cast<int>(key.size()),
                       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out,
                       &len) == nullptr) {
    throw std::bad_alloc();  // as in util/sha256.h: OpenSSL fails here only when out of memory
  }
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string signing_key(std::string_view secret, std::string_view date, const Scope& scope) {
  std::string k = hmac_sha256("AWS4" + std::string(secret), date);
  k = hmac_sha256(k, scope.region);
  k = hmac_sha256(k, scope.service);
  return hmac_sha256(k, "aws4_request");
}

Signed sign(const Request& request, const Credentials& credentials, const Scope& scope,
            std::string_view amz_date_value) {
  Signed out;
  out.headers_to_add.emplace_back("x-amz-date", std::string(amz_date_value));
  if (!credentials.session_token.empty()) {
    out.headers_to_add.emplace_back("x-amz-security-token", credentials.session_token);
  }

  // Canonical headers: lower-case names, sorted; host and the added ones included.
  std::vector<std::pair<std::string, std::string>> headers;
  headers.emplace_back("host", fold_spaces(request.host));
  for (const auto& [k, v] : request.headers) headers.emplace_back(str::to_lower(k), fold_spaces(v));
  for (const auto& [k, v] : out.headers_to_add) headers.emplace_back(k, v);
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  std::string signed_headers;
  for (size_t i = 0; i < headers.size(); ++i) {
    // A header given twice is signed once, its values joined by commas.
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.pop_back();  // the '\n'
      canonical_headers += ',' + headers[i].second + '\n';
      continue;
    }
    canonical_headers += headers[i].first + ':' + headers[i].second + '\n';
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += headers[i].first;
  }

  out.canonical_request = request.method + '\n' + canonical_uri(request.path) + '\n' +
                          canonical_query(request.query) + '\n' + canonical_headers + '\n' +
                          signed_headers + '\n' + request.payload_hash;

  std::string date(amz_date_value.substr(0, 8));
  std::string scope_text = date + '/' + scope.region + '/' + scope.service + "/aws4_request";
  out.string_to_sign = std::string(kAlgorithm) + '\n' + std::string(amz_date_value) + '\n' +
                       scope_text + '\n' + sha256_hex(out.canonical_request);

  std::string mac =
      hmac_sha256(signing_key(credentials.secret_access_key, date, scope), out.string_to_sign);
  out.signature = to_hex(mac.data(), mac.size());
  out.headers_to_add.emplace_back(
      "authorization", std::string(kAlgorithm) + " Credential=" + credentials.access_key_id + '/' +
                           scope_text + ", SignedHeaders=" + signed_headers +
                           ", Signature=" + out.signature);
  return out;
}

}  // namespace berth::store::sigv4
