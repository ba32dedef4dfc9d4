#include "store/s3_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "store/posix_io.h"
#include "util/files.h"
#include "util/libcrypto.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::store {
namespace {

using files::Fd;
using files::TempGuard;

constexpr std::string_view kFormat = "berth-store 1\n";  // spec 05 §2, as FileStore's

bool is_2xx(long status) { return status >= 200 && status < 300; }

std::string hex_of(std::string_view name) {
  return std::string(name.substr(kObjectNamePrefix.size()));
}

// 404 for a key that is not there. A missing bucket is also a 404, and must not read
// as "every key is absent": a mistyped bucket would then silently recompute the world.
bool no_such_key(const HttpResponse& r) {
  return r.status == 404 && parse_s3_error(r.body).code != "NoSuchBucket";
}

// Statuses worth another try: the server said "later" (429, 503 SlowDown), failed
// inside (500, 502, 504), or timed out reading us (RequestTimeout), or two
// conditional writes raced (409 ConditionalRequestConflict, AWS: "retry").
bool transient(const HttpResponse& r) {
  long s = r.status;
  if (s == 429 || s == 500 || s == 502 || s == 503 || s == 504) return true;
  if (s == 400 || s == 409) {
    std::string code = parse_s3_error(r.body).code;
    return code == "RequestTimeout" || code == "SlowDown" || code == "ConditionalRequestConflict";
  }
  return false;
}

// ---- XML: a tolerant extractor of the few elements S3 responses carry ----

// The raw content of each <tag>…</tag> (or <tag attr="…">…</tag>) in `xml`, at most
// `limit`. <tag/> gives "". An element without its end tag ends the search.
std::vector<std::string_view> elements(std::string_view xml, std::string_view tag,
                                       size_t limit = SIZE_MAX) {
  std::vector<std::string_view> out;
  std::string open = "<" + std::string(tag);
  std::string close = "</" + std::string(tag) + ">";
  size_t pos = 0;
  while (out.size() < limit) {
    size_t start = xml.find(open, pos);
    if (start == std::string_view::npos) break;
    size_t after = start + open.size();
    if (after >= xml.size()) break;
    char c = xml[after];
    if (c != '>' && c != '/' && !str::is_space(c)) {  // <KeyCount> is not <Key>
      pos = after;
      continue;
    }
    size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') {  // <tag/>
      out.emplace_back();
      pos = gt + 1;
      continue;
    }
    size_t end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

std::optional<std::string> first_element(std::string_view xml, std::string_view tag) {
  auto found = elements(xml, tag, 1);
  if (found.empty()) return std::nullopt;
  return xml_unescape(found[0]);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A numeric character reference's code point ("#65", "#x41"), or nullopt.
std::optional<uint32_t> char_ref(std::string_view ref) {
  if (ref.size() < 2 || ref[0] != '#') return std::nullopt;
  bool hex = ref[1] == 'x' || ref[1] == 'X';
  std::string_view digits = ref.substr(hex ? 2 : 1);
  if (digits.empty() || digits.size() > 8) return std::nullopt;
  uint32_t cp = 0;
  for (char c : digits) {
    uint32_t d;
    if (str::is_digit(c)) {
      d = static_cast<uint32_t>(c - '0');
    } else if (hex && c >= 'a' && c <= 'f') {
      d = static_cast<uint32_t>(c - 'a' + 10);
    } else if (hex && c >= 'A' && c <= 'F') {
      d = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    cp = cp * (hex ? 16 : 10) + d;
  }
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  return cp;
}

// The MD5 of `data` in hex, or "" where OpenSSL will not compute one (FIPS mode). Only
// to compare with an ETag, which S3 servers make the MD5 of a single-part object.
std::string md5_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const LibCrypto& c = libcrypto();
  if (c.EVP_Digest(data.data(), data.size(), out, &len, c.EVP_md5(), nullptr) != 1) return "";
  return to_hex(out, len);
}

std::string unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

std::string endpoint_host(std::string_view endpoint) {
  size_t p = endpoint.find("://");
  return std::string(p == std::string_view::npos ? endpoint : endpoint.substr(p + 3));
}

}  // namespace

// ---- Responses ----

std::string xml_unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '&') {
      out += c;
      continue;
    }
    size_t semi = text.find(';', i + 1);
    if (semi == std::string_view::npos || semi - i > 12) {
      out += c;
      continue;
    }
    std::string_view ref = text.substr(i + 1, semi - i - 1);
    if (ref == "amp") {
      out += '&';
    } else if (ref == "lt") {
      out += '<';
    } else if (ref == "gt") {
      out += '>';
    } else if (ref == "quot") {
      out += '"';
    } else if (ref == "apos") {
      out += '\'';
    } else if (auto cp = char_ref(ref)) {
      append_utf8(out, *cp);
    } else {
      out += c;  // not a reference we know: keep it as written
      continue;
    }
    i = semi;
  }
  return out;
}

S3ErrorBody parse_s3_error(std::string_view xml) {
  S3ErrorBody e;
  e.code = std::string(str::trim(first_element(xml, "Code").value_or("")));
  e.message = std::string(str::trim(first_element(xml, "Message").value_or("")));
  return e;
}

Result<ListPage> parse_list_page(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return fail(Errc::kIo,
                fmt::format("not a ListObjectsV2 result: \"{}\"", str::printable(xml, 80)));
  }
  ListPage page;
  for (std::string_view contents : elements(xml, "Contents")) {
    auto key = first_element(contents, "Key");
    if (!key) continue;
    page.keys.push_back(std::move(*key));
    uint64_t size = 0;
    std::string size_text(str::trim(first_element(contents, "Size").value_or("")));
    if (!size_text.empty() && size_text.size() < 20 &&
        std::all_of(size_text.begin(), size_text.end(), str::is_digit)) {
      size = std::stoull(size_text);
    }
    page.sizes.push_back(size);
    page.times_ms.push_back(
        parse_s3_time(str::trim(first_element(contents, "LastModified").value_or(""))).value_or(0));
  }
  std::string truncated = str::to_lower(str::trim(first_element(xml, "IsTruncated").value_or("")));
  page.truncated = truncated == "true";
  page.next_token =
      std::string(str::trim(first_element(xml, "NextContinuationToken").value_or("")));
  if (page.truncated && page.next_token.empty()) {
    return fail(Errc::kIo, "a truncated ListObjectsV2 result without a NextContinuationToken");
  }
  return page;
}

std::optional<int64_t> parse_s3_time(std::string_view text) {
  std::tm tm{};
  std::string t(text);
  int millis = 0;
  const char* end = nullptr;
  if (t.size() >= 20 && t[4] == '-' && t[10] == 'T') {
    // 2024-05-01T12:00:00[.fff]Z
    end = ::strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr) return std::nullopt;
    std::string_view rest(end);
    if (!rest.empty() && rest[0] == '.') {
      size_t k = 1;
      int scale = 100;
      for (; k < rest.size() && str::is_digit(rest[k]); ++k) {
        millis += (rest[k] - '0') * scale;
        scale /= 10;
      }
      rest.remove_prefix(k);
    }
    if (rest != "Z") return std::nullopt;
  } else {
    // Wed, 01 May 2024 12:00:00 GMT
    end = ::strptime(t.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == nullptr || *end != '\0') return std::nullopt;
  }
  time_t secs = ::timegm(&tm);
  if (secs == static_cast<time_t>(-1)) return std::nullopt;
  return int64_t{secs} * 1000 + millis;
}

// ---- Configuration ----

Result<std::string> normalise_endpoint(std::string_view url, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}=\"{}\": {}; expected http://host[:port] or https://host[:port]",
                            what, str::printable(url, 120), why));
  };
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    rest = url.substr(8);
  } else {
    return bad("not an http:// or https:// URL");
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return bad("no host");
  for (char c : rest) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '/' || c == '?' || c == '#' ||
        c == '@' || c == '%' || c == '\\') {
      return bad("only a host and port may follow the scheme (no path, query or user)");
    }
  }
  // The port, if any: after the last ':' that is not inside an IPv6 literal.
  size_t bracket = rest.rfind(']');
  size_t colon = rest.rfind(':');
  if (rest.front() == '[' && bracket == std::string_view::npos) return bad("unclosed '['");
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    if (rest.front() != '[' && rest.find(':') != colon) return bad("an IPv6 host needs [brackets]");
    auto port = str::parse_uint(rest.substr(colon + 1), 65535);
    if (!port.ok() || *port == 0) return bad("the port is not a number from 1 to 65535");
    if (colon == 0) return bad("no host");
  }
  return std::string(url.substr(0, url.size() - (url.back() == '/' ? 1 : 0)));
}

Result<S3Config> S3Config::from_env(std::string bucket, std::string prefix, const Env& env) {
  S3Config c;
  c.bucket = std::move(bucket);
  c.prefix = std::move(prefix);
  std::string where = "s3://" + c.bucket + (c.prefix.empty() ? "" : "/" + c.prefix);
  // An empty variable is an unset one: `AWS_REGION= berth run` means "no region".
  auto get = [&](std::string_view name) -> Result<std::string> {
    BERTH_TRY(auto v, env.get_bounded(name));
    return v.value_or("");
  };
  BERTH_TRY(c.credentials.access_key_id, get("AWS_ACCESS_KEY_ID"));
  BERTH_TRY(c.credentials.secret_access_key, get("AWS_SECRET_ACCESS_KEY"));
  BERTH_TRY(c.credentials.session_token, get("AWS_SESSION_TOKEN"));
  if (c.credentials.access_key_id.empty() || c.credentials.secret_access_key.empty()) {
    std::string missing = c.credentials.access_key_id.empty()
                              ? (c.credentials.secret_access_key.empty()
                                     ? "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are"
                                     : "AWS_ACCESS_KEY_ID is")
                              : "AWS_SECRET_ACCESS_KEY is";
    return fail(Errc::kInvalidInput,
                fmt::format("{}: no S3 credentials: {} not set (set AWS_ACCESS_KEY_ID and "
                            "AWS_SECRET_ACCESS_KEY, and AWS_SESSION_TOKEN for temporary "
                            "credentials)",
                            where, missing));
  }
  std::string region_var = "AWS_REGION";
  BERTH_TRY(std::string region, get("AWS_REGION"));
  if (region.empty()) {
    region_var = "AWS_DEFAULT_REGION";
    BERTH_TRY(region, get("AWS_DEFAULT_REGION"));
  }
  if (!region.empty()) {
    bool ok = region.size() <= 64;
    for (char ch : region) ok = ok && (str::is_alnum(ch) || ch == '-' || ch == '_');
    if (!ok) {
      return fail(Errc::kInvalidInput,
                  fmt::format("{}=\"{}\": a region is letters, digits and '-' (us-east-1)",
                              region_var, str::printable(region, 80)));
    }
    c.region = region;
  }
  std::string endpoint_var = "AWS_ENDPOINT_URL_S3";
  BERTH_TRY(std::string endpoint, get("AWS_ENDPOINT_URL_S3"));
  if (endpoint.empty()) {
    endpoint_var = "AWS_ENDPOINT_URL";
    BERTH_TRY(endpoint, get("AWS_ENDPOINT_URL"));
  }
  if (endpoint.empty()) {
    c.endpoint = "https://s3." + c.region + ".amazonaws.com";
  } else {
    BERTH_TRY(c.endpoint, normalise_endpoint(endpoint, endpoint_var));
  }
  return c;
}

// ---- S3Client ----

S3Client::S3Client(S3Config config, std::shared_ptr<HttpTransport> transport, const Clock& clock,
                   RetryPolicy retry)
    : config_(std::move(config)),
      host_(endpoint_host(config_.endpoint)),
      transport_(std::move(transport)),
      clock_(clock),
      retry_(std::move(retry)) {
  if (retry_.attempts < 1) retry_.attempts = 1;
  if (!retry_.sleep) {
    retry_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  }
}

std::string S3Client::url_of(const S3Request& request) const {
  std::string path = "/" + config_.bucket + (request.key.empty() ? "" : "/" + request.key);
  std::string query = sigv4::canonical_query(request.query);
  return config_.endpoint + sigv4::canonical_uri(path) + (query.empty() ? "" : "?" + query);
}

Failure S3Client::failure(const S3Request& request, const HttpResponse& response) const {
  S3ErrorBody e = parse_s3_error(response.body);
  std::string text =
      fmt::format("{} {}: HTTP {}", request.method, url_of(request), response.status);
  if (!e.code.empty()) text += " " + str::printable(e.code, 64);
  if (!e.message.empty()) text += ": " + str::printable(e.message, 300);
  if (e.code == "SignatureDoesNotMatch" || (request.method == "HEAD" && response.status == 403)) {
    text += " (check AWS_SECRET_ACCESS_KEY, and that AWS_REGION is the bucket's region)";
  } else if (e.code == "InvalidAccessKeyId" || e.code == "InvalidClientTokenId") {
    text += " (check AWS_ACCESS_KEY_ID)";
  } else if (e.code == "NoSuchBucket") {
    text += fmt::format(" (create the bucket \"{}\" first: berth does not create buckets)",
                        config_.bucket);
  }
  return fail(Errc::kIo, std::move(text));
}

void S3Client::pause(int attempt) const {
  int64_t delay = retry_.first_delay.count() << std::min(attempt - 1, 20);
  retry_.sleep(jittered(std::chrono::milliseconds(delay)));
}

Result<HttpResponse> S3Client::send(const S3Request& request) const {
  std::string path = "/" + config_.bucket + (request.key.empty() ? "" : "/" + request.key);
  std::string payload_hash =
      request.payload_hash.empty() ? sha256_hex(request.body) : request.payload_hash;
  std::string url = url_of(request);

  std::string last_problem;
  for (int attempt = 1; attempt <= retry_.attempts; ++attempt) {
    if (request.before_attempt) request.before_attempt();
    // Signed afresh for every try: a signature is valid for 15 minutes, and the
    // backoff may outlast that on a bad day.
    HttpHeaders headers = request.headers;
    headers.emplace_back("x-amz-content-sha256", payload_hash);
    sigv4::Request to_sign{request.method, host_, path, request.query, headers, payload_hash};
    sigv4::Signed s = sigv4::sign(to_sign, config_.credentials, sigv4::Scope{config_.region, "s3"},
                                  sigv4::amz_date(clock_.wall()));
    HttpRequest http;
    http.method = request.method;
    http.url = url;
    http.headers = std::move(headers);
    http.headers.emplace_back("Host", host_);
    for (auto& h : s.headers_to_add) http.headers.push_back(std::move(h));
    http.body = request.body;
    http.body_fd = request.body_fd;
    http.body_size = request.body_size;
    http.on_body = request.on_body;

    auto r = transport_->send(http);
    if (r.ok() && !transient(*r)) return std::move(*r);
    if (!r.ok()) {
      Errc c = r.error().code();
      if (c != Errc::kIo && c != Errc::kUnavailable) return r.error();  // cannot be sent at all
      last_problem = r.error().message();
    } else {
      last_problem = failure(request, *r).error.message();
    }
    if (attempt == retry_.attempts) break;
    pause(attempt);
  }
  // Every attempt met a transient failure: the server may answer later, which is the
  // store-patience layer's to wait for (patient_store.h).
  return fail(Errc::kUnavailable, fmt::format("{} (gave up after {} attempt{})", last_problem,
                                     retry_.attempts, retry_.attempts == 1 ? "" : "s"));
}

// ---- S3Store ----

S3Store::S3Store(S3Config config, Options options)
    : client_(std::move(config),
              options.transport ? std::move(options.transport) : std::make_shared<CurlTransport>(),
              options.clock != nullptr ? *options.clock : Clock::real(), std::move(options.retry)),
      clock_(options.clock != nullptr ? *options.clock : Clock::real()),
      refresh_after_(options.refresh_after) {
  const std::string& prefix = client_.config().prefix;
  base_ = prefix.empty() ? "" : prefix + "/";
}

Result<std::unique_ptr<S3Store>> S3Store::open(S3Config config, Options options) {
  if (config.bucket.empty()) return fail(Errc::kInvalidInput, "s3 store: no bucket");
  std::unique_ptr<S3Store> s(new S3Store(std::move(config), std::move(options)));
  BERTH_CHECK(s->check_format());
  BERTH_TRY(s->conditional_, s->probe_conditional_writes());
  return s;
}

std::string S3Store::object_key(std::string_view name) const {
  std::string hex = hex_of(name);
  return fmt::format("{}objects/{}/{}", base_, hex.substr(0, 2), hex.substr(2));
}

std::string S3Store::row_key(std::string_view address) const {
  return base_ + std::string(address);
}

std::string S3Store::describe() const {
  const S3Config& c = client_.config();
  return fmt::format("s3://{}{}{} ({})", c.bucket, c.prefix.empty() ? "" : "/", c.prefix,
                     c.endpoint);
}

std::vector<std::string> S3Store::notices() const {
  if (conditional_ == ConditionalWrites::kHonoured) return {};
  std::string what = conditional_ == ConditionalWrites::kIgnored
                         ? "the server ignores If-None-Match"
                         : "the server refuses conditional writes (501 to If-None-Match: *)";
  return {fmt::format(
      "{}: {}, so write-once is not enforced by the server: two workers may both publish "
      "one row; every lease is still decided by reading it back, which may duplicate work "
      "but never gives a wrong result",
      describe(), what)};
}

Result<void> S3Store::check_format() {
  // As FileStore::open (spec 05 §2): FORMAT is published write-once before anything
  // else, and a prefix that holds other things but no FORMAT is not ours to fill.
  std::string key = base_ + "FORMAT";
  BERTH_TRY(auto format, get_small(key, 4096));
  if (!format) {
    // List before rereading FORMAT: another opener may have created the store since.
    BERTH_TRY(auto keys, list_keys(base_, 10));
    BERTH_TRY(format, get_small(key, 4096));
    if (!format) {
      for (const auto& k : keys) {
        std::string_view rel = std::string_view(k).substr(std::min(k.size(), base_.size()));
        if (k.rfind(base_, 0) == 0 && rel.rfind("probe/", 0) != 0 && rel != "FORMAT") {
          return fail(Errc::kRefused,
                      fmt::format("{}: not a berth store (it holds \"{}\" but no FORMAT); "
                                  "choose an empty or new prefix",
                                  describe(), str::printable(k, 120)));
        }
      }
      S3Request put;
      put.body = std::string(kFormat);
      BERTH_TRY(Put p, put_key(key, std::move(put), false));
      (void)p;
    }
  }
  // Read once more for the ETag: whether this server's ETags are MD5s decides whether
  // reads can be checked against them (torn()).
  // Until the probe below has run, get_small trusts every read. FORMAT is never empty
  // nor a part of itself, so such a read is a write in progress (s3rver writes a body in
  // place and answers a PUT before its bytes reach the disk): read it again.
  std::string etag;
  for (int attempt = 1;; ++attempt) {
    BERTH_TRY(format, get_small(key, 4096, &etag));
    bool partial = format && format->size() < kFormat.size() && kFormat.starts_with(*format);
    if (!partial || attempt >= client_.attempts()) break;
    client_.pause(attempt);
  }
  if (format) etag_is_md5_ = !etag.empty() && md5_hex(*format) == etag;
  if (!format || *format != kFormat) {
    return fail(Errc::kRefused,
                fmt::format("{}: FORMAT is \"{}\", this berth reads \"{}\"", describe(),
                            format ? str::printable(*format) : std::string("(gone)"),
                            str::printable(kFormat)));
  }
  return Ok{};
}

Result<ConditionalWrites> S3Store::probe_conditional_writes() {
  // Two conditional PUTs of different bytes to a fresh key, then a read: the only way
  // to tell a server that ignores If-None-Match from one that honours it, since the
  // former says 200 to both (spec 05 §8).
  std::string key = base_ + "probe/" + files::unique_suffix();
  auto conditional_put = [&](std::string body) {
    S3Request r;
    r.method = "PUT";
    r.key = key;
    r.headers.emplace_back("If-None-Match", "*");
    r.body = std::move(body);
    return client_.send(r);
  };
  ConditionalWrites found;
  BERTH_TRY(HttpResponse first, conditional_put("first\n"));
  if (first.status == 501) return ConditionalWrites::kRefused;  // nothing was written
  S3Request what;                                               // for messages
  what.method = "PUT";
  what.key = key;
  if (!is_2xx(first.status)) return client_.failure(what, first);
  BERTH_TRY(HttpResponse second, conditional_put("second\n"));
  if (second.status == 412) {
    found = ConditionalWrites::kHonoured;
  } else if (second.status == 501) {
    found = ConditionalWrites::kRefused;
  } else if (is_2xx(second.status)) {
    // Accepted twice. Whether the second replaced the first or was dropped, the server
    // does not decide a winner, so every write must be read back.
    found = ConditionalWrites::kIgnored;
  } else {
    return client_.failure(what, second);
  }
  // The probe is not part of the store: remove it if we may, and never mind if not.
  S3Request del;
  del.method = "DELETE";
  del.key = key;
  (void)client_.send(del);
  return found;
}

Result<S3Store::Put> S3Store::put_key(const std::string& key, S3Request request,
                                      bool unconditional) {
  request.method = "PUT";
  request.key = key;
  bool conditional = !unconditional && conditional_ != ConditionalWrites::kRefused;
  if (conditional) request.headers.emplace_back("If-None-Match", "*");
  BERTH_TRY(HttpResponse r, client_.send(request));
  if (is_2xx(r.status)) return Put::kCreated;
  if (conditional && r.status == 412) return Put::kExisted;  // another writer was first
  if (conditional && r.status == 501) {
    // Refused the condition, not the write (spec 05 §8): send it as an ordinary PUT.
    request.headers.pop_back();
    BERTH_TRY(r, client_.send(request));
    if (is_2xx(r.status)) return Put::kCreated;
  }
  return client_.failure(request, r);
}

bool S3Store::reread_on_mismatch(int attempt) const {
  // An object is never rewritten with other bytes, but on a server that lets two
  // writers of one object overlap, a read can overlap a (same-bytes) write and come back
  // torn: read again before reporting corruption. Elsewhere a mismatch is the copy's.
  if (conditional_ == ConditionalWrites::kHonoured || attempt >= client_.attempts()) {
    return false;
  }
  client_.pause(attempt);
  return true;
}

bool S3Store::torn(std::string_view body, const std::string& etag) const {
  if (conditional_ == ConditionalWrites::kHonoured) return false;
  // s3rver also serves an object mid-PUT as an empty one, ETag and all: an empty body
  // is believed only when a second read agrees.
  if (body.empty()) return true;
  if (!etag_is_md5_) return false;
  // s3rver, mid-PUT, serves an empty body under `ETag: ""` (its metadata not yet
  // written) or under the ETag of the write in progress.
  if (etag.empty()) return true;
  if (etag.size() != 32) return false;  // a multipart "…-N" ETag is not an MD5
  return md5_hex(body) != etag;
}

Result<std::optional<std::string>> S3Store::get_small(const std::string& key, size_t max_bytes,
                                                      std::string* etag) {
  S3Request request;
  request.key = key;
  std::optional<std::pair<std::string, std::string>> last_torn;  // body, ETag
  for (int attempt = 1;; ++attempt) {
    BERTH_TRY(HttpResponse r, client_.send(request));
    if (no_such_key(r)) return std::optional<std::string>();
    if (r.status != 200) return client_.failure(request, r);
    if (r.body.size() > max_bytes) {
      return fail(Errc::kIo,
                  fmt::format("GET {}: larger than {} bytes", client_.url_of(request), max_bytes));
    }
    std::string tag = unquote(r.header("etag"));
    // Two equal torn reads in a row are a settled state, not a write in progress:
    // s3rver, after overlapping PUTs of one key, can keep one writer's bytes under
    // another's ETag for good. Those bytes are one whole write, so they are believed.
    // An empty ETag is a write still in progress, however long it takes; so is an
    // empty body under another body's ETag.
    bool settled = last_torn && last_torn->first == r.body && last_torn->second == tag &&
                   (!etag_is_md5_ || (!tag.empty() && (!r.body.empty() || md5_hex("") == tag)));
    if (!settled && torn(r.body, tag)) {
      last_torn.emplace(r.body, tag);
      if (attempt < client_.attempts()) {
        client_.pause(attempt);
        continue;
      }
      return fail(Errc::kIo, fmt::format("GET {}: the body read does not match its ETag {} in "
                                         "{} reads (is the server serving a write in progress?)",
                                         client_.url_of(request), str::printable(tag), attempt));
    }
    if (etag != nullptr) *etag = std::move(tag);
    return std::optional<std::string>(std::move(r.body));
  }
}

Result<std::vector<StoreEntry>> S3Store::list_entries(const std::string& key_prefix) {
  std::vector<StoreEntry> out;
  std::string token;
  for (;;) {
    S3Request request;
    request.query = {{"list-type", "2"}, {"prefix", key_prefix}};
    if (!token.empty()) request.query.emplace_back("continuation-token", token);
    BERTH_TRY(HttpResponse r, client_.send(request));
    if (r.status != 200) return client_.failure(request, r);
    auto page = parse_list_page(r.body);
    if (!page.ok()) return page.error().with_context("GET " + client_.url_of(request));
    for (size_t i = 0; i < page->keys.size(); ++i) {
      out.push_back({std::move(page->keys[i]), page->sizes[i], page->times_ms[i]});
    }
    if (!page->truncated) break;
    if (page->next_token == token) {
      return fail(Errc::kIo, fmt::format("GET {}: the server returned the same continuation "
                                         "token twice",
                                         client_.url_of(request)));
    }
    token = page->next_token;
  }
  return out;
}

Result<std::vector<std::string>> S3Store::list_keys(const std::string& key_prefix, int max_keys) {
  std::vector<std::string> out;
  std::string token;
  for (;;) {
    S3Request request;
    request.query = {{"list-type", "2"}, {"prefix", key_prefix}};
    if (max_keys > 0) request.query.emplace_back("max-keys", std::to_string(max_keys));
    if (!token.empty()) request.query.emplace_back("continuation-token", token);
    BERTH_TRY(HttpResponse r, client_.send(request));
    if (r.status != 200) return client_.failure(request, r);
    auto page = parse_list_page(r.body);
    if (!page.ok()) return page.error().with_context("GET " + client_.url_of(request));
    for (auto& k : page->keys) out.push_back(std::move(k));
    if (max_keys > 0 || !page->truncated) break;  // max_keys: one page is enough
    if (page->next_token == token) {
      return fail(Errc::kIo, fmt::format("GET {}: the server returned the same continuation "
                                         "token twice",
                                         client_.url_of(request)));
    }
    token = page->next_token;
  }
  return out;
}

std::string S3Store::problem_text(std::string_view name, const std::string& actual_hex) const {
  const S3Config& c = client_.config();
  return fmt::format(
      "{}: stored copy s3://{}/{} ({}) holds bytes whose SHA-256 is sha256:{}; treated as "
      "absent (the copy is left in place; this process's next put of the object replaces it)",
      name, c.bucket, object_key(name), c.endpoint, actual_hex);
}

void S3Store::remember_corrupt(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  corrupt_.insert(std::string(name));
}

bool S3Store::take_corrupt(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = corrupt_.find(name);
  if (it == corrupt_.end()) return false;
  corrupt_.erase(it);
  return true;
}

Result<std::string> S3Store::put_object(std::string_view bytes) {
  std::string name = object_name_of(bytes);
  // A copy this process read as corrupt is overwritten: the name fixes the contents,
  // so replacing bad bytes with the named ones is safe for every reader.
  bool repair = take_corrupt(name);
  if (!repair && conditional_ != ConditionalWrites::kHonoured) {
    BERTH_TRY(bool present, has_object(name));
    if (present) return name;  // write-once, decided by us since the server will not
  }
  S3Request request;
  request.body = std::string(bytes);
  request.payload_hash = hex_of(name);  // the name is the payload's hash
  auto put = put_key(object_key(name), std::move(request), repair);
  if (!put.ok()) {
    if (repair) remember_corrupt(name);
    return put.error();
  }
  if (*put == Put::kExisted) {
    // Already there: in use again, so refreshed (spec 05 §10); taken meanwhile, put again.
    BERTH_TRY(bool there, refresh(object_key(name)));
    if (!there) {
      S3Request again;
      again.body = std::string(bytes);
      again.payload_hash = hex_of(name);
      BERTH_TRY(Put p, put_key(object_key(name), std::move(again), true));
      (void)p;
    }
  }
  return name;
}

Result<std::string> S3Store::put_object_file(const std::string& path) {
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return files::os_error(path, "open", errno);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return files::os_error(path, "stat", errno);
  if (S_ISDIR(st.st_mode)) return fail(Errc::kIo, fmt::format("{}: is a directory", path));

  // Two passes: the signature covers the payload hash, which is the object's name, so
  // the file is hashed first (streamed) and then uploaded from the same descriptor.
  // A file changed in between is refused by a server that checks the hash (AWS,
  // Swift) and caught by verification on the next read by one that does not.
  Sha256 hash;
  BERTH_TRY(uint64_t size, posix::copy_hashing(in.get(), path, -1, "", hash));
  std::string hex = hash.finish_hex();
  std::string name = std::string(kObjectNamePrefix) + hex;
  bool repair = take_corrupt(name);
  if (!repair) {
    BERTH_TRY(bool present, has_object(name));
    if (present) return name;  // no upload at all
  }
  S3Request request;
  request.body_fd = in.get();
  request.body_size = size;
  request.payload_hash = hex;
  auto put = put_key(object_key(name), std::move(request), repair);
  if (!put.ok()) {
    if (repair) remember_corrupt(name);
    return put.error();
  }
  return name;
}

Result<ObjectRead> S3Store::get_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  S3Request request;
  request.key = object_key(name);
  ObjectRead out;
  HttpResponse r;
  std::string actual;
  for (int attempt = 1;; ++attempt) {
    BERTH_TRY(r, client_.send(request));
    if (no_such_key(r)) return out;
    if (r.status != 200) return client_.failure(request, r);
    actual = sha256_hex(r.body);
    if (actual == hex_of(name) || !reread_on_mismatch(attempt)) break;
  }
  if (actual != hex_of(name)) {
    out.found = Found::kCorrupt;
    out.problem = problem_text(name, actual);
    remember_corrupt(name);
    return out;
  }
  out.found = Found::kPresent;
  out.bytes = std::move(r.body);
  return out;
}

Result<ObjectRead> S3Store::get_object_to_file(std::string_view name,
                                               const std::string& dest_path) {
  BERTH_CHECK(check_object_name(name));
  std::string tmp;
  BERTH_TRY(Fd out, files::create_temp(files::parent_dir(dest_path), 0644, &tmp));
  TempGuard guard{tmp};
  Sha256 hash;
  std::optional<Error> write_error;
  S3Request request;
  request.key = object_key(name);
  request.before_attempt = [&] {  // a retry starts the file and the hash again
    hash = Sha256();
    write_error.reset();
    if (::ftruncate(out.get(), 0) != 0 || ::lseek(out.get(), 0, SEEK_SET) != 0) {
      write_error = files::os_error(tmp, "truncate", errno).error;
    }
  };
  request.on_body = [&](std::string_view piece) {
    // On a write error the rest of the body is drained rather than the transfer
    // aborted, so that the failure is reported as ours and not retried as the
    // network's.
    if (write_error) return true;
    hash.update(piece);
    auto w = files::write_all(out.get(), piece.data(), piece.size(), tmp);
    if (!w.ok()) write_error = w.error();
    return true;
  };
  ObjectRead result;
  std::string actual;
  for (int attempt = 1;; ++attempt) {
    BERTH_TRY(HttpResponse r, client_.send(request));  // before_attempt starts afresh
    if (no_such_key(r)) return result;
    if (r.status != 200) return client_.failure(request, r);
    if (write_error) return fail(*write_error);
    actual = hash.finish_hex();
    if (actual == hex_of(name) || !reread_on_mismatch(attempt)) break;
  }
  out.reset();
  if (actual != hex_of(name)) {
    result.found = Found::kCorrupt;
    result.problem = problem_text(name, actual);
    remember_corrupt(name);
    return result;  // dest_path untouched; the guard removes the copy
  }
  if (::rename(tmp.c_str(), dest_path.c_str()) != 0) {
    return files::os_error(dest_path, "rename into place", errno);
  }
  guard.disarm();
  result.found = Found::kPresent;
  return result;
}

Result<bool> S3Store::has_object(std::string_view name) {
  BERTH_CHECK(check_object_name(name));
  return refresh(object_key(name));
}

Result<bool> S3Store::touch_row(std::string_view address) {
  BERTH_CHECK(check_row_address(address));
  return refresh(row_key(address));
}

int64_t S3Store::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall().time_since_epoch())
      .count();
}

Result<std::optional<int64_t>> S3Store::head_time(const std::string& key) {
  S3Request request;
  request.method = "HEAD";
  request.key = key;
  BERTH_TRY(HttpResponse r, client_.send(request));
  if (r.status == 404) return std::optional<int64_t>();
  if (r.status != 200) return client_.failure(request, r);
  return std::optional<int64_t>(parse_s3_time(r.header("last-modified")).value_or(0));
}

Result<bool> S3Store::refresh(const std::string& key) {
  BERTH_TRY(std::optional<int64_t> t, head_time(key));
  if (!t) return false;
  // 0: the server sent no Last-Modified it could read, and nothing can be learnt.
  if (*t == 0 || now_ms() - *t < refresh_after_.count()) return true;
  // A copy onto itself makes a new Last-Modified (spec 05 §10); the bytes are the same.
  S3Request request;
  request.method = "PUT";
  request.key = key;
  request.headers.emplace_back("x-amz-copy-source",
                               "/" + client_.config().bucket + "/" + sigv4::uri_encode(key, true));
  request.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
  BERTH_TRY(HttpResponse r, client_.send(request));
  if (r.status == 404) return false;  // a collector took it meanwhile
  // A server that will not copy (an error answer) leaves the entry as it was: it is
  // there, and a collector's grace period is all that protects it (spec 05 §10).
  return true;
}

Result<std::vector<StoreEntry>> S3Store::list_objects() {
  BERTH_TRY(std::vector<StoreEntry> keys, list_entries(base_ + "objects/"));
  std::vector<StoreEntry> out;
  for (auto& e : keys) {
    std::string rel = e.name.substr(std::min(e.name.size(), base_.size() + 8));  // "ab/cdef…"
    if (rel.size() != 65 || rel[2] != '/') continue;
    std::string name = std::string(kObjectNamePrefix) + rel.substr(0, 2) + rel.substr(3);
    if (!check_object_name(name).ok()) continue;
    out.push_back({std::move(name), e.bytes, e.time_ms});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<StoreEntry>> S3Store::list_row_entries(std::string_view prefix) {
  BERTH_CHECK(check_row_prefix(prefix));
  std::string p(prefix);
  if (p.back() == '/') p.pop_back();
  BERTH_TRY(std::vector<StoreEntry> keys, list_entries(base_ + p));
  std::vector<StoreEntry> out;
  for (auto& e : keys) {
    if (e.name.rfind(base_, 0) != 0) continue;
    std::string rel = e.name.substr(base_.size());
    if (rel != p && rel.rfind(p + "/", 0) != 0) continue;
    out.push_back({std::move(rel), e.bytes, e.time_ms});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<StoreEntry>> S3Store::list_debris() {
  // What open() wrote to learn the server's conditional writes and could not delete.
  BERTH_TRY(std::vector<StoreEntry> keys, list_entries(base_ + "probe/"));
  for (auto& e : keys) e.name = e.name.substr(base_.size());
  return keys;
}

Result<std::vector<std::string>> S3Store::collect(
    EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
    const std::function<Result<std::set<std::string>>()>& spare) {
  auto key_of = [&](const std::string& name) -> Result<std::string> {
    switch (kind) {
      case EntryKind::kObject:
        BERTH_CHECK(check_object_name(name));
        return object_key(name);
      case EntryKind::kRow:
        BERTH_CHECK(check_row_address(name));
        return row_key(name);
      case EntryKind::kDebris:
        if (name.rfind("probe/", 0) != 0) {
          return fail(Errc::kInvalidInput, "not debris of this store: " + name);
        }
        return base_ + name;
    }
    return fail(Errc::kInternal, "unknown entry kind");
  };
  // S3 has no rename to take an entry out of sight: its time is read just before it is
  // deleted, after `spare` has answered (spec 05 §10 says what that leaves open).
  std::vector<std::pair<std::string, std::string>> old;  // name, key
  for (const std::string& name : names) {
    BERTH_TRY(std::string key, key_of(name));
    BERTH_TRY(std::optional<int64_t> t, head_time(key));
    if (t && *t < cutoff_ms) old.emplace_back(name, std::move(key));
  }
  BERTH_TRY(std::set<std::string> keep, spare());
  std::vector<std::string> deleted;
  for (const auto& [name, key] : old) {
    if (keep.count(name)) continue;
    BERTH_TRY(std::optional<int64_t> t, head_time(key));
    if (!t || *t >= cutoff_ms) continue;
    S3Request request;
    request.method = "DELETE";
    request.key = key;
    BERTH_TRY(HttpResponse r, client_.send(request));
    if (r.status / 100 != 2 && r.status != 404) return client_.failure(request, r);
    deleted.push_back(name);
  }
  return deleted;
}

Result<RowPut> S3Store::put_row(std::string_view address, std::string_view bytes) {
  BERTH_CHECK(check_row_address(address));
  if (bytes.size() > kMaxRowBytes) {
    return fail(Errc::kInvalidInput, fmt::format("row {}: {} bytes is over the limit of {}",
                                                 address, bytes.size(), kMaxRowBytes));
  }
  std::string key = row_key(address);
  RowPut out;
  auto existing_row = [&]() -> Result<RowPut> {
    BERTH_TRY(auto existing, get_small(key, kMaxRowBytes));
    for (int attempt = 1; !existing && attempt < client_.attempts(); ++attempt) {
      client_.pause(attempt);  // as for the read-back below
      BERTH_TRY(existing, get_small(key, kMaxRowBytes));
    }
    if (!existing) {
      return fail(Errc::kIo, fmt::format("{}: row {} was reported present and then not found",
                                         describe(), address));
    }
    out.existing = std::move(*existing);
    return out;
  };
  S3Request request;
  request.body = std::string(bytes);

  if (conditional_ == ConditionalWrites::kHonoured) {
    // The server decides: exactly one conditional PUT of any number succeeds.
    BERTH_TRY(Put p, put_key(key, std::move(request), false));
    if (p == Put::kCreated) {
      out.created = true;
      return out;
    }
    return existing_row();
  }

  // The server does not decide (spec 05 §8): read before writing, so that a row
  // published long ago is never replaced, and read back after, so that of writers
  // that raced the one whose bytes stayed is told it won and the others are handed
  // those bytes. Two racers can both be told they won when a third write lands
  // between; the lease that relies on this reads its row back again (spec 06).
  BERTH_TRY(auto before, get_small(key, kMaxRowBytes));
  if (before) {
    out.existing = std::move(*before);
    return out;
  }
  BERTH_TRY(Put p, put_key(key, std::move(request), false));
  if (p == Put::kExisted) return existing_row();  // honoured after all
  BERTH_TRY(auto back, get_small(key, kMaxRowBytes));
  // Swift, while overlapping PUTs of one key settle, can answer 404 just after one of
  // them succeeded: read again before concluding anything.
  for (int attempt = 1; !back && attempt < client_.attempts(); ++attempt) {
    client_.pause(attempt);
    BERTH_TRY(back, get_small(key, kMaxRowBytes));
  }
  if (!back) {
    return fail(Errc::kIo, fmt::format("{}: row {} was written and then not found (is the "
                                       "server read-after-write consistent?)",
                                       describe(), address));
  }
  if (*back == bytes) {
    out.created = true;
  } else {
    out.existing = std::move(*back);  // someone else's write landed over ours
  }
  return out;
}

Result<std::optional<std::string>> S3Store::get_row(std::string_view address) {
  BERTH_CHECK(check_row_address(address));
  return get_small(row_key(address), kMaxRowBytes);
}

Result<std::vector<std::string>> S3Store::list_rows(std::string_view prefix) {
  BERTH_CHECK(check_row_prefix(prefix));
  std::string p(prefix);
  if (p.back() == '/') p.pop_back();
  // Listed by the prefix without its '/' so that a row at the prefix itself is found,
  // then filtered to whole components: "rows/v1/leases/c" must not match ".../cat".
  BERTH_TRY(auto keys, list_keys(base_ + p));
  std::vector<std::string> out;
  for (auto& k : keys) {
    if (k.rfind(base_, 0) != 0) continue;
    std::string rel = k.substr(base_.size());
    if (rel == p || rel.rfind(p + "/", 0) == 0) out.push_back(std::move(rel));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace berth::store
