#include "store/http.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/shared_library.h"
#include "util/strings.h"

namespace berth::store {
namespace {

// Bodies of error responses are XML a few hundred bytes long; anything past this is
// not worth holding (and a misbehaving server cannot make us hold it).
constexpr size_t kMaxCollectedErrorBody = 1u << 20;

// libcurl's soname: ABI 4, unchanged since 2006.
constexpr const char* kLibcurl = "libcurl.so.4";

// libcurl, loaded when the first transport is made rather than when berth starts:
// linked, it and the thirty libraries it needs cost every berth process about 4 ms of
// start-up, and only an s3:// store uses it. The declarations are curl.h's.
struct CurlApi {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_reset) easy_reset = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
  std::string error;  // why it is not usable; empty when it is
};

// Loaded and globally initialised once (a static's initialiser runs once, even with
// threads: curl_global_init itself is not thread-safe). Never unloaded.
const CurlApi& curl() {
  static const CurlApi api = [] {
    CurlApi a;
    SharedLibrary lib(kLibcurl, "libcurl4");
    lib.bind(a.global_init, "curl_global_init");
    lib.bind(a.easy_init, "curl_easy_init");
    lib.bind(a.easy_cleanup, "curl_easy_cleanup");
    lib.bind(a.easy_reset, "curl_easy_reset");
    lib.bind(a.easy_setopt, "curl_easy_setopt");
    lib.bind(a.easy_perform, "curl_easy_perform");
    lib.bind(a.easy_getinfo, "curl_easy_getinfo");
    lib.bind(a.easy_strerror, "curl_easy_strerror");
    lib.bind(a.slist_append, "curl_slist_append");
    lib.bind(a.slist_free_all, "curl_slist_free_all");
    a.error = lib.error();
    if (a.error.empty() && a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      a.error = "curl_global_init failed";
    }
    return a;
  }();
  return api;
}

struct Transfer {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  CURL* handle = nullptr;
  // Upload position (memory body or file).
  uint64_t sent = 0;
  int upload_errno = 0;
  bool sink_failed = false;
  bool status_known = false;
  bool to_sink = false;
  bool collect_all = false;  // a 2xx body nobody streams: the caller wants it whole
};

size_t on_read(char* buf, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpRequest& r = *t->request;
  size_t want = size * n;
  if (r.body_fd >= 0) {
    uint64_t left = r.body_size - t->sent;
    if (want > left) want = static_cast<size_t>(left);
    if (want == 0) return 0;
    for (;;) {
      ssize_t got = ::pread(r.body_fd, buf, want, static_cast<off_t>(t->sent));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        // A file that shrank under us, or a read error: never send a short body
        // under a Content-Length the server would accept.
        t->upload_errno = got < 0 ? errno : EIO;
        return CURL_READFUNC_ABORT;
      }
      t->sent += static_cast<uint64_t>(got);
      return static_cast<size_t>(got);
    }
  }
  uint64_t left = r.body.size() - t->sent;
  if (want > left) want = static_cast<size_t>(left);
  std::memcpy(buf, r.body.data() + t->sent, want);
  t->sent += want;
  return want;
}

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (!t->status_known) {
    // The status line has been read by the time the body starts.
    long status = 0;
    curl().easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
    bool ok = status >= 200 && status < 300;
    t->to_sink = t->request->on_body && ok;
    t->collect_all = !t->request->on_body && ok;
    t->status_known = true;
  }
  if (t->to_sink) {
    if (!t->request->on_body(std::string_view(data, len))) {
      t->sink_failed = true;
      return CURL_WRITEFUNC_ERROR;
    }
    return len;
  }
  std::string& body = t->response->body;
  if (t->collect_all || body.size() < kMaxCollectedErrorBody) body.append(data, len);
  return len;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  std::string_view line(data, len);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after a 100 Continue, or a redirect): forget the last one's.
    t->response->headers.clear();
    return len;
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    t->response->headers.emplace_back(str::to_lower(str::trim(line.substr(0, colon))),
                                      std::string(str::trim(line.substr(colon + 1))));
  }
  return len;
}

bool retryable(CURLcode c) {
  switch (c) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_ABORTED_BY_CALLBACK:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

CurlTransport::CurlTransport() { (void)curl(); }

CurlTransport::~CurlTransport() {
  for (void* h : idle_) curl().easy_cleanup(static_cast<CURL*>(h));
}

void* CurlTransport::take_handle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl().easy_init();
}

void CurlTransport::give_back(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(handle);
}

Result<HttpResponse> CurlTransport::send(const HttpRequest& request) {
  if (!curl().error.empty()) {
    return fail(Errc::kIo, request.method + " " + request.url + ": " + curl().error);
  }
  CURL* h = static_cast<CURL*>(take_handle());
  if (h == nullptr)
    return fail(Errc::kIo, request.method + " " + request.url + ": curl_easy_init failed");
  curl().easy_reset(h);  // keeps the connection cache, drops every option

  HttpResponse response;
  Transfer t;
  t.request = &request;
  t.response = &response;
  t.handle = h;

  curl().easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
  curl().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 30L);
  curl().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect would need re-signing
  curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl().easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl().easy_setopt(h, CURLOPT_HEADERDATA, &t);

  bool has_body = request.body_fd >= 0 || !request.body.empty() || request.method == "PUT";
  if (request.method == "HEAD") {
    curl().easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method == "PUT" || has_body) {
    uint64_t size = request.body_fd >= 0 ? request.body_size : request.body.size();
    curl().easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl().easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl().easy_setopt(h, CURLOPT_READDATA, &t);
    curl().easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    if (request.method != "PUT") {
      curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
  } else if (request.method != "GET") {
    curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }

  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    // "Name;" is curl's way to send a header with an empty value.
    std::string line = v.empty() ? k + ";" : k + ": " + v;
    headers = curl().slist_append(headers, line.c_str());
  }
  // No "Expect: 100-continue" round trip before each upload: the bodies are either
  // small or already hashed, and a refusal (412) costs one wasted upload at worst.
  headers = curl().slist_append(headers, "Expect:");
  curl().easy_setopt(h, CURLOPT_HTTPHEADER, headers);

  char errbuf[CURL_ERROR_SIZE] = {0};
  curl().easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl().easy_perform(h);
  curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  curl().easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl().slist_free_all(headers);
  give_back(h);

  if (rc != CURLE_OK) {
    std::string what = errbuf[0] != '\0' ? errbuf : curl().easy_strerror(rc);
    std::string where = request.method + " " + request.url;
    if (t.sink_failed) return fail(Errc::kIo, where + ": writing the response body failed");
    if (t.upload_errno != 0) {
      return fail(Errc::kIo, fmt::format("{}: reading the body to upload failed: {}", where,
                                         std::strerror(t.upload_errno)));
    }
    return fail(retryable(rc) ? Errc::kUnavailable : Errc::kInvalidInput, where + ": " + what);
  }
  return response;
}

}  // namespace berth::store
