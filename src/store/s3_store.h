// S3Store: the s3://bucket/prefix backend, an ObjectStore in an S3 bucket (spec 05 §8).
//
// For N workers on N machines that share no filesystem. The layout mirrors FileStore's
// under `<prefix>/`: FORMAT, objects/ab/cdef…, rows/v1/… (a row's address is its key).
// Requests are path-style (`<endpoint>/<bucket>/<key>`), signed with SigV4 over the
// real payload hash, and retried with backoff on transient failures (connection
// errors, 429, 500, 502, 503, 504, SlowDown).
//
// Write-once is asked of the server: every object and row is PUT with
// `If-None-Match: *`, and 412 means another writer got there first. Servers differ,
// so open() probes which of three things this one does (ConditionalWrites):
//   kHonoured  412 on the second write: exactly one writer of a row wins (AWS S3
//              since 2024, MinIO, Ceph).
//   kRefused   501 NotImplemented (OpenStack Swift's s3api): writes are sent
//              unconditionally.
//   kIgnored   2xx and the second write replaced the first (s3rver): nothing the
//              server says reveals it, hence the probe.
// When not honoured, put_row reads before it writes and reads back after, so the
// last writer is told it won and an earlier one is handed the row that replaced its
// own; two workers may then both believe for a moment that they published, which
// costs duplicated work and never a wrong result (spec 06 §3). notices() says so.
//
// On such a server a read is also checked against the write it may overlap: a row
// whose bytes do not match its MD5 ETag, or an object whose bytes do not match its
// name, is read again (with the retry backoff) before it is believed.
//
// Objects are verified on every read like every backend's, but a corrupt remote copy
// is not deleted (a bucket's user may not be allowed to, and another reader may be
// looking at it): the next put of that object from this process overwrites it with
// verified bytes, which is safe because the name fixes the contents.
//
// Thread safety: every method may be called from many threads at once.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/http.h"
#include "store/object_store.h"
#include "store/sigv4.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/result.h"

namespace berth::store {

// ---- Configuration (spec 05 §8) ----

struct S3Config {
  std::string bucket;
  std::string prefix;    // "" or "a/b": no leading or trailing '/'
  std::string endpoint;  // "https://s3.us-east-1.amazonaws.com", "http://127.0.0.1:8080"
  std::string region = "us-east-1";
  sigv4::Credentials credentials;

  // Credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and optional
  // AWS_SESSION_TOKEN; the region from AWS_REGION or AWS_DEFAULT_REGION (default
  // us-east-1); the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (default
  // https://s3.<region>.amazonaws.com). Fails with kInvalidInput naming the variables
  // when credentials are missing, or the variable and its value when the endpoint is
  // not "http[s]://host[:port]".
  static Result<S3Config> from_env(std::string bucket, std::string prefix, const Env& env);
};

// Checks and normalises an endpoint URL: "http[s]://host[:port]" with an optional
// trailing '/'. Returns it without the '/'; kInvalidInput naming `what` and the value.
Result<std::string> normalise_endpoint(std::string_view url, std::string_view what);

// ---- Server responses (exposed for tests and tests/fuzz/fuzz_s3_xml.cc) ----

// The text of an XML element's content with the five predefined entities and numeric
// character references decoded; an unknown or malformed reference is kept as written.
std::string xml_unescape(std::string_view text);

// <Error><Code>…</Code><Message>…</Message></Error>: empty fields when absent. Never
// fails: a body that is not XML gives two empty strings.
struct S3ErrorBody {
  std::string code;
  std::string message;
};
S3ErrorBody parse_s3_error(std::string_view xml);

// One page of a ListObjectsV2 result. Fails (kIo) when the body is not a
// ListBucketResult, or says it is truncated without a continuation token.
struct ListPage {
  std::vector<std::string> keys;  // <Contents><Key>, decoded, in the order sent
  // Per key, in the same order: <Size> (0 when absent) and <LastModified> in ms since
  // the epoch (0 when absent or unreadable).
  std::vector<uint64_t> sizes;
  std::vector<int64_t> times_ms;
  bool truncated = false;
  std::string next_token;
};
Result<ListPage> parse_list_page(std::string_view xml);

// A time as S3 writes it — ISO 8601 in a listing ("2024-05-01T12:00:00.000Z") or an
// HTTP date in Last-Modified ("Wed, 01 May 2024 12:00:00 GMT") — in ms since the
// epoch; nullopt for anything else.
std::optional<int64_t> parse_s3_time(std::string_view text);

// ---- Signed requests ----

// How a failed request is retried: `attempts` tries in all, the first delay
// `first_delay` and doubling, each drawn uniformly from [d/2, d] (jitter, so that N
// workers told to slow down do not come back in step).
struct RetryPolicy {
  int attempts = 5;
  std::chrono::milliseconds first_delay{100};
  // How to wait; the default sleeps the thread. Tests pass one that records.
  std::function<void(std::chrono::milliseconds)> sleep;
};

// One S3 request, before signing. `key` is relative to the bucket ("" for the bucket
// itself), raw: S3Client encodes it.
struct S3Request {
  std::string method = "GET";
  std::string key;
  sigv4::Pairs query;
  HttpHeaders headers;  // extra headers, signed: If-None-Match
  std::string body;
  int body_fd = -1;  // or a streamed body, as in HttpRequest
  uint64_t body_size = 0;
  std::string payload_hash;  // hex SHA-256 of the body; computed from `body` when empty
  std::function<bool(std::string_view)> on_body;  // as in HttpRequest
  std::function<void()> before_attempt;           // called before each try (reset a download)
};

// Signs and sends S3 requests for one bucket, with retries. Thread-safe.
class S3Client {
 public:
  S3Client(S3Config config, std::shared_ptr<HttpTransport> transport, const Clock& clock,
           RetryPolicy retry);

  // The response, once it is not transient: any status other than 429 and 5xx (501
  // included: it is an answer), or a transient one on the last attempt. Fails when the
  // last attempt got no response at all or a transient status (kIo naming the method,
  // URL, status and S3 error code), or at once when the transport cannot send it.
  Result<HttpResponse> send(const S3Request& request) const;

  // The URL `request` goes to (what messages name).
  std::string url_of(const S3Request& request) const;
  // The retry policy's attempts, and its wait after failed attempt `attempt` (1-based),
  // for callers that retry what only they can recognise as transient.
  int attempts() const { return retry_.attempts; }
  void pause(int attempt) const;
  // kIo: "<METHOD> <url>: HTTP <status> <Code>: <Message>" plus a hint for the codes a
  // user can act on (bad credentials, a missing bucket).
  Failure failure(const S3Request& request, const HttpResponse& response) const;

  const S3Config& config() const { return config_; }

 private:
  S3Config config_;
  std::string host_;  // the endpoint's host[:port], as signed and sent
  std::shared_ptr<HttpTransport> transport_;
  const Clock& clock_;
  RetryPolicy retry_;
};

// ---- The store ----

enum class ConditionalWrites {
  kHonoured,  // 412 when the key exists: the server enforces write-once
  kRefused,   // 501 NotImplemented: sent unconditionally instead
  kIgnored,   // accepted and overwritten: nothing enforces write-once
};

class S3Store : public ObjectStore {
 public:
  struct Options {
    std::shared_ptr<HttpTransport> transport;  // default: a CurlTransport
    const Clock* clock = nullptr;              // default: Clock::real() (request dates)
    RetryPolicy retry;
    // How old an entry's Last-Modified may be before a use copies it onto itself
    // (spec 05 §10); a test of a live server makes every use a copy with 0.
    std::chrono::milliseconds refresh_after = kRefreshAfter;
  };

  // Opens the store at s3://bucket/prefix: checks FORMAT (creating it when the prefix
  // holds nothing; kRefused for another format or a prefix that holds other things),
  // then probes the server's conditional writes under `<prefix>/probe/<token>`. Fails
  // with the server's error (kIo, naming the URL and the S3 code) when the bucket or
  // the credentials are wrong.
  static Result<std::unique_ptr<S3Store>> open(S3Config config, Options options);
  static Result<std::unique_ptr<S3Store>> open(S3Config config) {
    return open(std::move(config), Options{});
  }

  // What open() found.
  ConditionalWrites conditional_writes() const { return conditional_; }
  const S3Config& config() const { return client_.config(); }
  // The key of object `name` / row `address` in the bucket (`<prefix>/objects/ab/…`).
  std::string object_key(std::string_view name) const;
  std::string row_key(std::string_view address) const;

  // "s3://bucket/prefix (endpoint)".
  std::string describe() const override;
  // One notice when conditional writes are not honoured, saying what that costs.
  std::vector<std::string> notices() const override;
  Result<std::string> put_object(std::string_view bytes) override;
  Result<std::string> put_object_file(const std::string& path) override;
  Result<ObjectRead> get_object(std::string_view name) override;
  Result<ObjectRead> get_object_to_file(std::string_view name,
                                        const std::string& dest_path) override;
  Result<bool> has_object(std::string_view name) override;
  Result<RowPut> put_row(std::string_view address, std::string_view bytes) override;
  Result<std::optional<std::string>> get_row(std::string_view address) override;
  Result<std::vector<std::string>> list_rows(std::string_view prefix) override;
  Result<bool> touch_row(std::string_view address) override;

  // Collection (spec 05 §10): an entry's time is its Last-Modified, and a refresh is a
  // copy of the key onto itself (x-amz-metadata-directive: REPLACE). S3 has no rename,
  // so collect() reads each time with HEAD just before its DELETE; debris is what an
  // open() left under probe/.
  Result<std::vector<StoreEntry>> list_objects() override;
  Result<std::vector<StoreEntry>> list_row_entries(std::string_view prefix) override;
  Result<std::vector<StoreEntry>> list_debris() override;
  Result<std::vector<std::string>> collect(
      EntryKind kind, const std::vector<std::string>& names, int64_t cutoff_ms,
      const std::function<Result<std::set<std::string>>()>& spare) override;

 private:
  S3Store(S3Config config, Options options);
  int64_t now_ms() const;
  // HEAD: the key's Last-Modified (0 when the server sent none it could read), or
  // nullopt when there is no such key.
  Result<std::optional<int64_t>> head_time(const std::string& key);
  // Whether `key` exists; older than kRefreshAfter, it is copied onto itself.
  Result<bool> refresh(const std::string& key);
  // Every key under `key_prefix` with its size and time, all pages.
  Result<std::vector<StoreEntry>> list_entries(const std::string& key_prefix);

  enum class Put { kCreated, kExisted };
  // PUTs `body` (or the file) at `key`: conditionally unless the server refuses that
  // or `unconditional`; a 501 falls back to an ordinary PUT.
  Result<Put> put_key(const std::string& key, S3Request request, bool unconditional);
  // GETs a small value; nullopt on NoSuchKey. Sets *etag to the response's ETag.
  Result<std::optional<std::string>> get_small(const std::string& key, size_t max_bytes,
                                               std::string* etag = nullptr);
  // True when a read may have overlapped a write and should be repeated: on a server
  // that does not honour conditional writes (s3rver writes a body in place, so a GET
  // during a PUT can return a torn one) and whose ETags are MD5s, `body` does not
  // match `etag`, or there is no ETag; or the body is empty (s3rver serves a key
  // mid-PUT as an empty object). get_small() believes such a read once a second one
  // agrees with it.
  bool torn(std::string_view body, const std::string& etag) const;
  // After an object read that did not match its name (attempt `attempt`): whether to
  // read again, having waited; false when the mismatch is to be believed.
  bool reread_on_mismatch(int attempt) const;
  // Every key under `key_prefix`, all pages, in the server's order.
  Result<std::vector<std::string>> list_keys(const std::string& key_prefix, int max_keys = 0);
  Result<void> check_format();
  Result<ConditionalWrites> probe_conditional_writes();
  std::string problem_text(std::string_view name, const std::string& actual_hex) const;
  void remember_corrupt(std::string_view name);
  bool take_corrupt(std::string_view name);

  S3Client client_;
  const Clock& clock_;
  std::chrono::milliseconds refresh_after_;
  std::string base_;  // "<prefix>/" or ""
  ConditionalWrites conditional_ = ConditionalWrites::kHonoured;
  bool etag_is_md5_ = false;  // FORMAT's ETag was the MD5 of its bytes (found at open)
  std::mutex mu_;
  std::set<std::string, std::less<>> corrupt_;  // names read back corrupt (guarded by mu_)
};

}  // namespace berth::store
