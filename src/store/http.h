// HttpTransport: one HTTP request in, status + headers + body out — the seam between
// the s3:// backend and the network (spec 05 §8).
//
// The S3 store builds, signs, retries and interprets requests; a transport only moves
// bytes. CurlTransport is the real one (libcurl); FakeTransport (a test-support header,
// store/fake_transport_for_test.h) hands every request to a function, so that the
// store's handling of 412, 501, 503, error bodies and paging is tested without a server
// (s3_store_test.cc).
//
// A transport fails (Result error) only when no HTTP response arrived: kIo for a
// network failure worth retrying (connection refused or reset, timeout, DNS), and
// kInvalidInput when the request itself cannot be sent (a malformed URL). Any HTTP
// status, 5xx included, is a response, not an error: the caller decides.
//
// Thread safety: send() may be called from many threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace berth::store {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";  // "HEAD" sends no body and expects none back
  std::string url;             // "http://host:port/bucket/key?query", already encoded
  HttpHeaders headers;         // sent as given (Host included, when set)
  // The body of a PUT: `body`, or, when body_fd >= 0, body_size bytes read from that
  // descriptor from offset 0 with pread (streamed; the descriptor is not moved, so a
  // retry can send it again).
  std::string body;
  int body_fd = -1;
  uint64_t body_size = 0;
  // When set, the body of a 2xx response is handed to this function in pieces instead
  // of collected in HttpResponse::body (streamed downloads). Returning false aborts the
  // transfer, and send() then fails with kIo. Bodies of other statuses are collected.
  std::function<bool(std::string_view)> on_body;
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;  // names lower-cased
  std::string body;     // empty when on_body took it

  // The first header named `name` (lower-case), or "".
  std::string header(std::string_view name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual Result<HttpResponse> send(const HttpRequest& request) = 0;
};

// libcurl, loaded (dlopen) when the first transport is made; when it cannot be, every
// request fails saying why. Handles are kept in a pool behind a mutex and reused
// (keep-alive). Connect timeout 10 s; a transfer slower than 1 KiB/s for 30 s is
// aborted; no signals (safe in threads); no proxy from the environment unless the
// process sets one for libcurl.
class CurlTransport : public HttpTransport {
 public:
  CurlTransport();
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  Result<HttpResponse> send(const HttpRequest& request) override;

 private:
  void* take_handle();  // CURL*, kept opaque so this header needs no curl
  void give_back(void* handle);

  std::mutex mu_;
  std::vector<void*> idle_;
};

}  // namespace berth::store
