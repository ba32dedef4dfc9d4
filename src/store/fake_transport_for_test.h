// FakeTransport: an HttpTransport (store/http.h) whose every request goes to a handler
// that plays the server, recording what was sent — for tests of the S3 client and store
// (test-only; header-only, so the library never links it).
#pragma once

#include <unistd.h>

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "store/http.h"

namespace berth::store {

// Every request goes to `handler`, which plays the server. Records what was sent.
class FakeTransport : public HttpTransport {
 public:
  using Handler = std::function<Result<HttpResponse>(const HttpRequest&)>;
  explicit FakeTransport(Handler handler) : handler_(std::move(handler)) {}

  Result<HttpResponse> send(const HttpRequest& request) override;

  // "METHOD url" of every request so far, in order.
  std::vector<std::string> log() const;

 private:
  Handler handler_;
  mutable std::mutex mu_;
  std::vector<std::string> log_;
};

inline Result<HttpResponse> FakeTransport::send(const HttpRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(request.method + " " + request.url);
  }
  HttpRequest copy = request;
  if (request.body_fd >= 0) {
    // Read the streamed body as the real transport would.
    copy.body.resize(request.body_size);
    size_t have = 0;
    while (have < copy.body.size()) {
      ssize_t n = ::pread(request.body_fd, copy.body.data() + have, copy.body.size() - have,
                          static_cast<off_t>(have));
      if (n <= 0) return fail(Errc::kIo, request.url + ": reading the body to upload failed");
      have += static_cast<size_t>(n);
    }
    copy.body_fd = -1;
  }
  BERTH_TRY(HttpResponse r, handler_(copy));
  if (request.on_body && r.status >= 200 && r.status < 300 && request.method != "HEAD") {
    std::string body = std::move(r.body);
    r.body.clear();
    // Hand it over in two pieces, so that a sink that assumes one call is caught.
    size_t half = body.size() / 2;
    if (!request.on_body(std::string_view(body).substr(0, half)) ||
        !request.on_body(std::string_view(body).substr(half))) {
      return fail(Errc::kIo,
                  request.method + " " + request.url + ": writing the response body failed");
    }
  }
  return r;
}

inline std::vector<std::string> FakeTransport::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

}  // namespace berth::store
