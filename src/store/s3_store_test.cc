// S3Store: response handling against a fake server (FakeS3 below: 412, 501, an
// ignored If-None-Match, injected 503s and transport failures, paged listings), the
// configuration from the environment, the XML extractor, and live tests against the
// two real servers of shared/services when BERTH_TEST_S3_SWIFT / BERTH_TEST_S3RVER
// name them (scripts/test.sh starts both and sets both).
//
// The contract suite (contract_test.cc) runs on S3 through open_s3_for_contract() and
// s3_skip_reason(), defined at the end of this file.
#include "store/s3_store.h"
#include "store/fake_transport_for_test.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <map>
#include <thread>

#include "store/testing.h"
#include "store/url.h"
#include "util/files.h"
#include "util/libcrypto.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace berth::store {
namespace testing {

// ---- A fake S3 server ----

constexpr const char* kFakeEndpoint = "http://fake.test:9000";
constexpr const char* kFakeBucket = "bkt";

HttpResponse xml_error(long status, const std::string& code, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
           message + "</Message><RequestId>tx1</RequestId></Error>";
  return r;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string md5_hex(std::string_view s) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  libcrypto().EVP_Digest(s.data(), s.size(), out, &len, libcrypto().EVP_md5(), nullptr);
  return to_hex(out, len);
}

// Times as S3 writes them: an HTTP date (Last-Modified) and ISO 8601 (a listing).
std::string http_date(int64_t ms) {
  time_t t = static_cast<time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}
std::string iso_date(int64_t ms) {
  time_t t = static_cast<time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms % 1000);
}

// An S3 bucket in memory: PUT (with If-None-Match handled as `mode` says), GET, HEAD,
// DELETE, ListObjectsV2 in pages of `page_size`. It insists on what a real server
// checks: a SigV4 Authorization header and x-amz-content-sha256 equal to the hash of
// the body that arrived.
class FakeS3 {
 public:
  enum class Mode { kHonour, kRefuse, kIgnore };
  explicit FakeS3(Mode mode) : mode_(mode) {}

  Result<HttpResponse> handle(const HttpRequest& req) {
    std::unique_lock<std::mutex> lock(mu_);
    ++requests_;
    if (!injected_.empty()) {
      auto r = std::move(injected_.front());
      injected_.pop_front();
      return r;
    }
    std::string hdr_auth, hdr_hash, hdr_inm, hdr_host, hdr_copy;
    for (const auto& [k, v] : req.headers) {
      std::string lk = str::to_lower(k);
      if (lk == "x-amz-copy-source") hdr_copy = percent_decode(v);
      if (lk == "authorization") hdr_auth = v;
      if (lk == "x-amz-content-sha256") hdr_hash = v;
      if (lk == "if-none-match") hdr_inm = v;
      if (lk == "host") hdr_host = v;
    }
    if (hdr_auth.rfind("AWS4-HMAC-SHA256 Credential=AKID/", 0) != 0 ||
        hdr_host != "fake.test:9000") {
      return xml_error(403, "AccessDenied", "unsigned");
    }
    if (hdr_hash != sha256_hex(req.body)) {
      return xml_error(400, "XAmzContentSHA256Mismatch", "payload hash");
    }
    std::string_view url = req.url;
    EXPECT_EQ(url.substr(0, std::string_view(kFakeEndpoint).size()), kFakeEndpoint);
    url.remove_prefix(std::string_view(kFakeEndpoint).size());
    std::string_view query;
    if (size_t q = url.find('?'); q != std::string_view::npos) {
      query = url.substr(q + 1);
      url = url.substr(0, q);
    }
    std::string path = percent_decode(url);  // "/bkt/key"
    std::string bucket = path.substr(
        1, path.find('/', 1) == std::string::npos ? std::string::npos : path.find('/', 1) - 1);
    std::string key = path.size() > bucket.size() + 2 ? path.substr(bucket.size() + 2) : "";
    if (bucket != kFakeBucket)
      return xml_error(404, "NoSuchBucket", "The specified bucket does not exist.");

    if (key.empty() && req.method == "GET") return list(query);
    if (req.method == "PUT" && !hdr_copy.empty()) {
      // CopyObject: "/bkt/key" onto `key`, a new Last-Modified.
      std::string from = hdr_copy.substr(std::min(hdr_copy.size(), bucket.size() + 2));
      auto src = objects_.find(from);
      if (src == objects_.end()) return xml_error(404, "NoSuchKey", "no copy source");
      objects_[key] = src->second;
      times_[key] = now_ms;
      ++copies_;
      HttpResponse ok;
      ok.status = 200;
      ok.body = "<CopyObjectResult></CopyObjectResult>";
      return ok;
    }
    if (req.method == "PUT") {
      if (!hdr_inm.empty() && mode_ == Mode::kRefuse) {
        return xml_error(501, "NotImplemented", "Conditional object PUTs are not supported.");
      }
      if (hdr_inm == "*" && mode_ == Mode::kHonour && objects_.count(key) > 0) {
        return xml_error(412, "PreconditionFailed",
                         "At least one of the pre-conditions you specified did not hold");
      }
      objects_[key] = req.body;
      times_[key] = now_ms;
      ++puts_;
      if (after_put) {
        auto hook = after_put;
        lock.unlock();
        hook(key);
      }
      HttpResponse ok;
      ok.status = 200;
      return ok;
    }
    auto it = objects_.find(key);
    if (req.method == "DELETE") {
      if (it != objects_.end()) objects_.erase(it);
      HttpResponse r;
      r.status = 204;
      return r;
    }
    if (it == objects_.end()) {
      if (req.method == "HEAD") {
        HttpResponse r;
        r.status = 404;
        return r;
      }
      return xml_error(404, "NoSuchKey", "The specified key does not exist.");
    }
    HttpResponse r;
    r.status = 200;
    r.headers.emplace_back("etag", "\"" + md5_hex(it->second) + "\"");
    r.headers.emplace_back("last-modified", http_date(times_[key]));
    if (req.method == "GET") r.body = it->second;
    return r;
  }

  HttpResponse list(std::string_view query) {
    std::map<std::string, std::string> q;
    for (std::string_view part : str::split(query, '&')) {
      size_t eq = part.find('=');
      q[percent_decode(part.substr(0, eq))] =
          eq == std::string_view::npos ? "" : percent_decode(part.substr(eq + 1));
    }
    EXPECT_EQ(q["list-type"], "2");
    ++lists_;
    if (q.count("continuation-token") > 0) ++continued_lists_;
    size_t max = page_size;
    if (q.count("max-keys") > 0) max = std::min<size_t>(max, std::stoul(q["max-keys"]));
    std::string after = q.count("continuation-token") > 0 ? q["continuation-token"].substr(4) : "";
    std::string body =
        "<?xml version=\"1.0\"?><ListBucketResult "
        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name>";
    size_t n = 0;
    std::string last;
    bool truncated = false;
    for (auto it = objects_.lower_bound(q["prefix"]); it != objects_.end(); ++it) {
      if (it->first.rfind(q["prefix"], 0) != 0) break;
      if (!after.empty() && it->first <= after) continue;
      if (n == max) {
        truncated = true;
        break;
      }
      body += "<Contents><Key>" + str::xml_escape(it->first) + "</Key><LastModified>" +
              iso_date(times_[it->first]) + "</LastModified><Size>" +
              std::to_string(it->second.size()) + "</Size></Contents>";
      last = it->first;
      ++n;
    }
    body += "<KeyCount>" + std::to_string(n) + "</KeyCount>";
    body += truncated ? "<IsTruncated>true</IsTruncated><NextContinuationToken>tok:" +
                            str::xml_escape(last) + "</NextContinuationToken>"
                      : "<IsTruncated>false</IsTruncated>";
    body += "</ListBucketResult>";
    HttpResponse r;
    r.status = 200;
    r.body = body;
    return r;
  }

  // The next request gets `r` instead of being served.
  void inject(Result<HttpResponse> r) {
    std::lock_guard<std::mutex> lock(mu_);
    injected_.push_back(std::move(r));
  }
  void set(const std::string& key, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_[key] = std::move(bytes);
  }
  std::optional<std::string> get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }
  void set_mode(Mode m) {
    std::lock_guard<std::mutex> lock(mu_);
    mode_ = m;
  }
  int requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  int puts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return puts_;
  }

  size_t page_size = 2;
  std::function<void(const std::string& key)> after_put;  // called unlocked
  // The server's clock: every write's Last-Modified (a test moves it).
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  int copies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return copies_;
  }
  void set_time(const std::string& key, int64_t ms) {
    std::lock_guard<std::mutex> lock(mu_);
    times_[key] = ms;
  }
  std::vector<std::string> keys() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : objects_) out.push_back(k);
    return out;
  }
  int lists_ = 0;
  int continued_lists_ = 0;

 private:
  mutable std::mutex mu_;
  Mode mode_;
  std::map<std::string, std::string> objects_;
  std::map<std::string, int64_t> times_;
  int copies_ = 0;
  std::deque<Result<HttpResponse>> injected_;
  int requests_ = 0;
  int puts_ = 0;
};

S3Config fake_config(const std::string& prefix = "runs/1") {
  S3Config c;
  c.bucket = kFakeBucket;
  c.prefix = prefix;
  c.endpoint = kFakeEndpoint;
  c.credentials = {"AKID", "secret", ""};
  return c;
}

struct FakeSetup {
  std::shared_ptr<FakeS3> server;
  std::shared_ptr<FakeTransport> transport;
  std::shared_ptr<std::vector<std::chrono::milliseconds>> sleeps =
      std::make_shared<std::vector<std::chrono::milliseconds>>();
  std::shared_ptr<std::mutex> sleeps_mu = std::make_shared<std::mutex>();

  explicit FakeSetup(FakeS3::Mode mode) : server(std::make_shared<FakeS3>(mode)) {
    auto s = server;
    transport = std::make_shared<FakeTransport>([s](const HttpRequest& r) { return s->handle(r); });
  }
  S3Store::Options options() const {
    S3Store::Options o;
    o.transport = transport;
    auto sl = sleeps;
    auto mu = sleeps_mu;
    o.retry.sleep = [sl, mu](std::chrono::milliseconds d) {
      std::lock_guard<std::mutex> lock(*mu);
      sl->push_back(d);
    };
    return o;
  }
  Result<std::unique_ptr<S3Store>> open(const std::string& prefix = "runs/1") const {
    return S3Store::open(fake_config(prefix), options());
  }
};

// ---- Live servers ----

struct LiveServer {
  const char* env_var;
  const char* bucket;
  const char* access_key;
  const char* secret;
  bool create_bucket;  // s3rver's bucket exists from its start; Swift's is made here
};
const LiveServer kSwift{"BERTH_TEST_S3_SWIFT", "berth-test", "test:tester", "testing", true};
const LiveServer kS3rver{"BERTH_TEST_S3RVER", "testbucket", "S3RVER", "S3RVER", false};

std::string live_endpoint(const LiveServer& s) {
  const char* v = std::getenv(s.env_var);  // a test, not a library: getenv is fine here
  return v != nullptr ? v : "";
}

// A prefix no other run or test shares: runs do not collide and need no cleanup.
std::string unique_prefix() {
  static std::atomic<int> counter{0};
  static const std::string run = [] {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    return "berth-test/" +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) +
           "-" + std::to_string(::getpid());
  }();
  return run + "/" + std::to_string(counter++);
}

S3Config live_config(const LiveServer& s, const std::string& prefix) {
  S3Config c;
  c.bucket = s.bucket;
  c.prefix = prefix;
  c.endpoint = live_endpoint(s);
  c.credentials = {s.access_key, s.secret, ""};
  return c;
}

// A signed request with no condition, bypassing the store (to make a bucket, or to
// corrupt an object behind the store's back).
Result<HttpResponse> raw_request(const LiveServer& s, const std::string& method,
                                 const std::string& key, const std::string& body) {
  S3Client client(live_config(s, ""), std::make_shared<CurlTransport>(), Clock::real(),
                  RetryPolicy{});
  S3Request r;
  r.method = method;
  r.key = key;
  r.body = body;
  return client.send(r);
}

Result<void> ensure_bucket(const LiveServer& s) {
  if (!s.create_bucket) return Ok{};
  static std::once_flag once;
  static Result<void> made;
  std::call_once(once, [&] {
    auto r = raw_request(s, "PUT", "", "");
    if (!r.ok()) {
      made = r.error();
    } else if (!(r->status == 200 || r->status == 409)) {  // 409: already ours
      made = fail(Errc::kIo, "PUT bucket: HTTP " + std::to_string(r->status) + " " + r->body);
    }
  });
  return made;
}

Result<std::unique_ptr<S3Store>> open_live(const LiveServer& s, const std::string& prefix) {
  BERTH_CHECK(ensure_bucket(s));
  return S3Store::open(live_config(s, prefix));
}

// For contract_test.cc: which is "fake_honoured", "fake_refused", "fake_ignored",
// "swift" or "s3rver".
const char* s3_skip_reason(const std::string& which) {
  if (which == "swift" && live_endpoint(kSwift).empty()) {
    return "BERTH_TEST_S3_SWIFT is not set (scripts/test.sh starts Swift and sets it)";
  }
  if (which == "s3rver" && live_endpoint(kS3rver).empty()) {
    return "BERTH_TEST_S3RVER is not set (scripts/test.sh starts s3rver and sets it)";
  }
  return nullptr;
}

std::unique_ptr<ObjectStore> open_s3_for_contract(const std::string& which) {
  Result<std::unique_ptr<S3Store>> s = fail(Errc::kInternal, "unknown S3 backend " + which);
  if (which.rfind("fake_", 0) == 0) {
    FakeS3::Mode mode = which == "fake_honoured"  ? FakeS3::Mode::kHonour
                        : which == "fake_refused" ? FakeS3::Mode::kRefuse
                                                  : FakeS3::Mode::kIgnore;
    s = FakeSetup(mode).open();
  } else if (which == "swift") {
    s = open_live(kSwift, unique_prefix());
  } else if (which == "s3rver") {
    s = open_live(kS3rver, unique_prefix());
  }
  if (!s.ok()) {
    ADD_FAILURE() << which << ": " << s.error().message();
    return nullptr;
  }
  return std::move(*s);
}

}  // namespace testing

namespace {

using testing::FakeS3;
using testing::FakeSetup;

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

HttpResponse status_only(long status) {
  HttpResponse r;
  r.status = status;
  return r;
}

// ---- Opening: FORMAT and the conditional-write probe ----

TEST(S3Store, OpenCreatesFormatAndFindsHonouredConditionalWrites) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ((*s)->conditional_writes(), ConditionalWrites::kHonoured);
  EXPECT_TRUE((*s)->notices().empty());
  EXPECT_EQ(f.server->get("runs/1/FORMAT"), "berth-store 1\n");
  EXPECT_EQ((*s)->describe(), "s3://bkt/runs/1 (http://fake.test:9000)");
  // A second opener finds the store as it is.
  auto again = f.open();
  ASSERT_TRUE(again.ok()) << again.error().message();
}

TEST(S3Store, ServerThatIgnoresIfNoneMatchIsDetectedAndNoticed) {
  FakeSetup f(FakeS3::Mode::kIgnore);
  auto s = f.open();
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ((*s)->conditional_writes(), ConditionalWrites::kIgnored);
  auto notes = (*s)->notices();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "s3://bkt/runs/1 (http://fake.test:9000): the server ignores If-None-Match, so "
            "write-once is not enforced by the server: two workers may both publish one row; "
            "every lease is still decided by reading it back, which may duplicate work but "
            "never gives a wrong result");
}

TEST(S3Store, ServerThatRefusesConditionalWritesFallsBackToOrdinaryPuts) {
  FakeSetup f(FakeS3::Mode::kRefuse);
  auto s = f.open();
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ((*s)->conditional_writes(), ConditionalWrites::kRefused);
  // FORMAT was written before the probe, by a conditional PUT answered 501 and then an
  // ordinary one.
  EXPECT_EQ(f.server->get("runs/1/FORMAT"), "berth-store 1\n");
  auto log = f.transport->log();
  int format_puts = 0;
  for (const auto& l : log) format_puts += l == "PUT http://fake.test:9000/bkt/runs/1/FORMAT";
  EXPECT_EQ(format_puts, 2);
  ASSERT_EQ((*s)->notices().size(), 1u);
  EXPECT_TRUE(contains((*s)->notices()[0], "refuses conditional writes"));
  auto row = (*s)->put_row(row_address("steps", "k"), "mine");
  ASSERT_TRUE(row.ok()) << row.error().message();
  EXPECT_TRUE(row->created);
}

TEST(S3Store, AnotherFormatIsRefused) {
  FakeSetup f(FakeS3::Mode::kHonour);
  f.server->set("runs/1/FORMAT", "berth-store 2\n");
  auto s = f.open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kRefused);
  EXPECT_TRUE(contains(s.error().message(), "berth-store 2")) << s.error().message();
}

TEST(S3Store, APrefixHoldingOtherThingsIsNotTakenOver) {
  FakeSetup f(FakeS3::Mode::kHonour);
  f.server->set("runs/1/thesis.pdf", "x");
  auto s = f.open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kRefused);
  EXPECT_TRUE(contains(s.error().message(), "not a berth store")) << s.error().message();
  // A neighbouring prefix is no obstacle.
  EXPECT_TRUE(f.open("runs/2").ok());
}

TEST(S3Store, MissingBucketIsAnErrorNotAnEmptyStore) {
  FakeSetup f(FakeS3::Mode::kHonour);
  S3Config c = testing::fake_config();
  c.bucket = "other";
  auto s = S3Store::open(c, f.options());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kIo);
  EXPECT_TRUE(contains(s.error().message(), "NoSuchBucket")) << s.error().message();
  EXPECT_TRUE(contains(s.error().message(), "create the bucket")) << s.error().message();
}

// ---- Write-once with a server that honours If-None-Match ----

TEST(S3Store, ObjectPutAnsweredWith412IsSuccess) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  auto a = (*s)->put_object("x");
  ASSERT_TRUE(a.ok());
  int puts = f.server->puts();
  auto b = (*s)->put_object("x");  // 412 from the server
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(f.server->puts(), puts);  // nothing overwritten
  std::string hex = a->substr(7);
  EXPECT_EQ(f.server->get("runs/1/objects/" + hex.substr(0, 2) + "/" + hex.substr(2)), "x");
}

TEST(S3Store, RowPutAnsweredWith412ReturnsTheExistingRow) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  std::string addr = row_address("leases", "k/0");
  ASSERT_TRUE((*s)->put_row(addr, "mine")->created);
  auto second = (*s)->put_row(addr, "theirs");
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->existing, "mine");
  EXPECT_EQ(f.server->get("runs/1/rows/v1/leases/k/0"), "mine");
}

TEST(S3Store, A501AfterTheProbeStillFallsBackToAnOrdinaryPut) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  f.server->inject(testing::xml_error(501, "NotImplemented", "no conditions today"));
  auto row = (*s)->put_row(row_address("steps", "k"), "v");
  ASSERT_TRUE(row.ok()) << row.error().message();
  EXPECT_TRUE(row->created);
  EXPECT_EQ(f.server->get("runs/1/rows/v1/steps/k"), "v");
}

// ---- Write-once with a server that ignores it ----

TEST(S3Store, IgnoredConditionsMeanReadBeforeWrite) {
  FakeSetup f(FakeS3::Mode::kIgnore);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  std::string addr = row_address("steps", "k");
  ASSERT_TRUE((*s)->put_row(addr, "mine")->created);
  auto second = (*s)->put_row(addr, "theirs");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->existing, "mine");
  EXPECT_EQ(f.server->get("runs/1/rows/v1/steps/k"), "mine");  // never overwritten
  // An object already there is not uploaded again either.
  ASSERT_TRUE((*s)->put_object("obj").ok());
  int puts = f.server->puts();
  ASSERT_TRUE((*s)->put_object("obj").ok());
  EXPECT_EQ(f.server->puts(), puts);
}

TEST(S3Store, IgnoredConditionsMeanTheReadBackDecides) {
  FakeSetup f(FakeS3::Mode::kIgnore);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  // Another worker's PUT lands just after ours.
  FakeS3* server = f.server.get();
  f.server->after_put = [server](const std::string& key) {
    if (key.find("/rows/") != std::string::npos) server->set(key, "theirs");
  };
  auto r = (*s)->put_row(row_address("steps", "k"), "mine");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(r->created);
  EXPECT_EQ(r->existing, "theirs");
}

TEST(S3Store, TornReadsAreReadAgainWhereTheServerDoesNotDecide) {
  // s3rver writes a body in place: a GET during a PUT can return part of it, under the
  // ETag of the whole.
  FakeSetup f(FakeS3::Mode::kIgnore);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  std::string addr = row_address("steps", "k");
  ASSERT_TRUE((*s)->put_row(addr, "mine")->created);
  f.sleeps->clear();
  HttpResponse torn;
  torn.status = 200;
  torn.headers.emplace_back("etag", "\"" + testing::md5_hex("mine") + "\"");
  torn.body = "mi";
  f.server->inject(torn);
  auto got = (*s)->get_row(addr);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(*got, "mine");
  EXPECT_EQ(f.sleeps->size(), 1u);
  // A torn read of an object is read again rather than reported corrupt.
  auto name = (*s)->put_object("object bytes");
  ASSERT_TRUE(name.ok());
  torn.headers.clear();
  torn.body = "object";
  f.server->inject(torn);
  auto obj = (*s)->get_object(*name);
  ASSERT_TRUE(obj.ok());
  EXPECT_TRUE(obj->present()) << obj->problem;
}

TEST(S3Store, FormatReadEmptyJustAfterItsPutIsReadAgain) {
  // s3rver answers a PUT before the body reaches its disk: the read of FORMAT that
  // follows can come back empty, before the store knows whether to trust reads.
  FakeSetup f(FakeS3::Mode::kIgnore);
  FakeS3* server = f.server.get();
  int torn_reads = 2;
  f.server->after_put = [server, &torn_reads](const std::string& key) {
    if (!key.ends_with("/FORMAT")) return;
    HttpResponse torn;
    torn.status = 200;
    torn.headers.emplace_back("etag", "\"" + testing::md5_hex("berth-store 1\n") + "\"");
    for (; torn_reads > 0; --torn_reads) server->inject(torn);
  };
  auto s = f.open();
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(torn_reads, 0);
  EXPECT_EQ(f.sleeps->size(), 2u);
}

// ---- Retries and errors ----

TEST(S3Store, Transient503IsRetriedWithBackoffThenSucceeds) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  f.sleeps->clear();
  f.server->inject(testing::xml_error(503, "SlowDown", "Please reduce your request rate."));
  f.server->inject(status_only(500));
  f.server->inject(fail(Errc::kIo, "Connection refused"));
  auto name = (*s)->put_object("after three failures");
  ASSERT_TRUE(name.ok()) << name.error().message();
  ASSERT_EQ(f.sleeps->size(), 3u);
  // 100 ms doubling, each drawn from [d/2, d].
  for (size_t i = 0; i < 3; ++i) {
    int64_t d = 100 << i;
    EXPECT_GE((*f.sleeps)[i].count(), d / 2) << i;
    EXPECT_LE((*f.sleeps)[i].count(), d) << i;
  }
  EXPECT_TRUE((*s)->get_object(*name)->present());
}

TEST(S3Store, RetryExhaustionNamesMethodUrlStatusAndCode) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  f.sleeps->clear();
  for (int i = 0; i < 5; ++i) {
    f.server->inject(testing::xml_error(503, "SlowDown", "Please reduce your request rate."));
  }
  auto r = (*s)->get_row(row_address("steps", "k"));
  ASSERT_FALSE(r.ok());
  // Transient to the end: the store-patience layer above waits on (patient_store.h).
  EXPECT_EQ(r.error().code(), Errc::kUnavailable);
  EXPECT_EQ(r.error().message(),
            "GET http://fake.test:9000/bkt/runs/1/rows/v1/steps/k: HTTP 503 SlowDown: Please "
            "reduce your request rate. (gave up after 5 attempts)");
  EXPECT_EQ(f.sleeps->size(), 4u);
}

TEST(S3Store, ClientErrorsAreNotRetried) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  f.sleeps->clear();
  int before = f.server->requests();
  f.server->inject(testing::xml_error(
      403, "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided."));
  auto r = (*s)->put_row(row_address("steps", "k"), "v");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(f.server->requests(), before + 1);
  EXPECT_TRUE(f.sleeps->empty());
  const std::string& m = r.error().message();
  EXPECT_TRUE(contains(m, "PUT http://fake.test:9000/bkt/runs/1/rows/v1/steps/k")) << m;
  EXPECT_TRUE(contains(m, "HTTP 403 SignatureDoesNotMatch: The request signature")) << m;
  EXPECT_TRUE(contains(m, "check AWS_SECRET_ACCESS_KEY")) << m;
}

TEST(S3Store, UnsendableRequestIsNotRetried) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  f.sleeps->clear();
  f.server->inject(fail(Errc::kInvalidInput, "URL using bad/illegal format"));
  EXPECT_FALSE((*s)->has_object(object_name_of("x")).ok());
  EXPECT_TRUE(f.sleeps->empty());
}

// ---- Verification ----

TEST(S3Store, CorruptObjectIsReportedLeftInPlaceAndRepairedByTheNextPut) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  auto name = (*s)->put_object("good bytes");
  ASSERT_TRUE(name.ok());
  std::string key = (*s)->object_key(*name);
  f.server->set(key, "evil bytes");

  auto r = (*s)->get_object(*name);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->found, Found::kCorrupt);
  EXPECT_TRUE(r->bytes.empty());
  EXPECT_TRUE(contains(r->problem, "s3://bkt/" + key)) << r->problem;
  EXPECT_TRUE(contains(r->problem, "sha256:" + sha256_hex("evil bytes"))) << r->problem;
  EXPECT_EQ(f.server->get(key), "evil bytes");  // not deleted

  ::berth::store::testing::TempDir d;
  std::string dest = d / "out";
  ASSERT_TRUE(files::write_file_atomic(dest, "old").ok());
  auto to_file = (*s)->get_object_to_file(*name, dest);
  ASSERT_TRUE(to_file.ok());
  EXPECT_EQ(to_file->found, Found::kCorrupt);
  EXPECT_EQ(*files::read_file(dest), "old");

  // The recomputation's put replaces the bad copy despite write-once.
  ASSERT_TRUE((*s)->put_object("good bytes").ok());
  EXPECT_EQ(f.server->get(key), "good bytes");
  EXPECT_TRUE((*s)->get_object(*name)->present());
}

TEST(S3Store, StreamedDownloadRestartsCleanlyAfterARetry) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  std::string data(100000, 'q');
  auto name = (*s)->put_object(data);
  ASSERT_TRUE(name.ok());
  f.server->inject(status_only(502));
  ::berth::store::testing::TempDir d;
  auto r = (*s)->get_object_to_file(*name, d / "out");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->present());
  EXPECT_EQ(*files::read_file(d / "out"), data);
}

// ---- Listing ----

TEST(S3Store, ListRowsFollowsContinuationTokensAndKeepsWholeComponents) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  for (const char* k : {"c/4", "c/0", "c/3", "c/1", "c/2", "cat", "d"}) {
    ASSERT_TRUE((*s)->put_row(row_address("leases", k), k).ok());
  }
  f.server->lists_ = 0;
  f.server->continued_lists_ = 0;
  auto rows = (*s)->list_rows("rows/v1/leases/c");
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  EXPECT_EQ(*rows, (std::vector<std::string>{"rows/v1/leases/c/0", "rows/v1/leases/c/1",
                                             "rows/v1/leases/c/2", "rows/v1/leases/c/3",
                                             "rows/v1/leases/c/4"}));
  EXPECT_GE(f.server->continued_lists_, 2);  // pages of two
}

// ---- The XML extractor ----

TEST(S3Xml, ErrorBodiesFromATable) {
  struct Case {
    const char* xml;
    const char* code;
    const char* message;
  };
  const Case cases[] = {
      {"<?xml version='1.0' encoding='UTF-8'?>\n<Error><Code>NotImplemented</Code><Message>"
       "Conditional object PUTs are not supported.</Message><RequestId>tx</RequestId></Error>",
       "NotImplemented", "Conditional object PUTs are not supported."},
      {"<Error><Code> SlowDown </Code><Message>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; "
       "&#65;&#x42;&#x263A;</Message></Error>",
       "SlowDown", "a & b <c> \"d\" 'e' AB\xe2\x98\xba"},
      {"<Error><Code>X</Code></Error>", "X", ""},
      {"<Error><Message>only</Message>", "", "only"},
      {"not xml at all", "", ""},
      {"", "", ""},
      {"<Error><Code>unterminated", "", ""},
      {"<Error><Code/><Message>&bogus; &#0; &#xD800; &#99999999; &</Message></Error>", "",
       "&bogus; &#0; &#xD800; &#99999999; &"},
      {"<CodeName>no</CodeName><Code a=\"1\">Attr</Code>", "Attr", ""},
  };
  for (const auto& c : cases) {
    S3ErrorBody e = parse_s3_error(c.xml);
    EXPECT_EQ(e.code, c.code) << c.xml;
    EXPECT_EQ(e.message, c.message) << c.xml;
  }
}

TEST(S3Xml, ListPagesFromATable) {
  auto page = parse_list_page(
      "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><Name>b</Name><KeyCount>2"
      "</KeyCount><IsTruncated>true</IsTruncated><Contents><Key>p/a&amp;b</Key><Size>1</Size>"
      "</Contents><Contents><Key>p/c</Key></Contents><NextContinuationToken>1ueGcxLPRx1Tr/X"
      "</NextContinuationToken></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.error().message();
  EXPECT_EQ(page->keys, (std::vector<std::string>{"p/a&b", "p/c"}));
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "1ueGcxLPRx1Tr/X");

  auto last =
      parse_list_page("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->keys.empty());
  EXPECT_FALSE(last->truncated);

  EXPECT_FALSE(parse_list_page("<Error><Code>AccessDenied</Code></Error>").ok());
  EXPECT_FALSE(parse_list_page("<ListBucketResult><IsTruncated>true</IsTruncated>").ok());
  // CommonPrefixes and Prefix do not pass for keys.
  auto prefixes = parse_list_page(
      "<ListBucketResult><Prefix>p/</Prefix><CommonPrefixes><Prefix>p/q/</Prefix>"
      "</CommonPrefixes></ListBucketResult>");
  ASSERT_TRUE(prefixes.ok());
  EXPECT_TRUE(prefixes->keys.empty());
}

TEST(S3Xml, TimesInBothFormsS3WritesThem) {
  EXPECT_EQ(parse_s3_time("2023-11-14T22:13:20.000Z"), int64_t{1'700'000'000'000});
  EXPECT_EQ(parse_s3_time("2023-11-14T22:13:20.25Z"), int64_t{1'700'000'000'250});
  EXPECT_EQ(parse_s3_time("2023-11-14T22:13:20Z"), int64_t{1'700'000'000'000});
  EXPECT_EQ(parse_s3_time("Tue, 14 Nov 2023 22:13:20 GMT"), int64_t{1'700'000'000'000});
  for (const char* bad : {"", "yesterday", "2023-11-14 22:13:20", "2023-11-14T22:13:20",
                          "Tue, 14 Nov 2023 22:13:20", "Tue, 14 Nov 2023 22:13:20 GMT x"}) {
    EXPECT_EQ(parse_s3_time(bad), std::nullopt) << bad;
  }
  auto page = parse_list_page(
      "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key>"
      "<LastModified>2023-11-14T22:13:20.000Z</LastModified><Size>12</Size></Contents>"
      "<Contents><Key>j</Key><Size>x</Size></Contents></ListBucketResult>");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->sizes, (std::vector<uint64_t>{12, 0}));
  EXPECT_EQ(page->times_ms, (std::vector<int64_t>{1'700'000'000'000, 0}));
}

// ---- Collection (spec 05 §10) ----

TEST(S3Store, AUseOfAnOldObjectCopiesItOntoItselfAndAYoungOneIsLeft) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  auto name = (*s)->put_object("kept");
  ASSERT_TRUE(name.ok());
  std::string key = (*s)->object_key(*name);
  EXPECT_TRUE(*(*s)->has_object(*name));
  EXPECT_EQ(f.server->copies(), 0) << "young: no write";
  f.server->set_time(key, f.server->now_ms - 2 * 3600 * 1000);
  EXPECT_TRUE(*(*s)->has_object(*name));
  EXPECT_EQ(f.server->copies(), 1);
  EXPECT_EQ(f.server->get(key), "kept");
  // A row too; and a put of an object already there refreshes it.
  ASSERT_TRUE((*s)->put_row("rows/v1/steps/k", "row").ok());
  f.server->set_time("runs/1/rows/v1/steps/k", 0 + 1000);
  EXPECT_TRUE(*(*s)->touch_row("rows/v1/steps/k"));
  EXPECT_EQ(f.server->copies(), 2);
  f.server->set_time(key, 1000);
  ASSERT_TRUE((*s)->put_object("kept").ok());
  EXPECT_EQ(f.server->copies(), 3);
}

TEST(S3Store, CollectDeletesWhatIsStillOldAndNotSpared) {
  FakeSetup f(FakeS3::Mode::kHonour);
  auto s = f.open();
  ASSERT_TRUE(s.ok());
  int64_t day_ago = f.server->now_ms - 24 * 3600 * 1000;
  int64_t cutoff = f.server->now_ms - 2 * 3600 * 1000;
  std::vector<std::string> names;
  for (const char* b : {"old", "spared", "refreshed", "young"}) {
    auto n = (*s)->put_object(b);
    ASSERT_TRUE(n.ok());
    names.push_back(*n);
    if (std::string(b) != "young") f.server->set_time((*s)->object_key(*n), day_ago);
  }
  auto listed = (*s)->list_objects();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 4u);
  for (const auto& e : *listed) EXPECT_EQ(e.bytes, e.name == names[3] ? 5u : e.bytes);
  auto gone = (*s)->collect(EntryKind::kObject, names, cutoff,
                            [&]() -> Result<std::set<std::string>> {
                              // Meanwhile: a writer uses one; a new row names another.
                              EXPECT_TRUE(*(*s)->has_object(names[2]));
                              return std::set<std::string>{names[1]};
                            });
  ASSERT_TRUE(gone.ok()) << gone.error().message();
  EXPECT_EQ(*gone, std::vector<std::string>{names[0]});
  EXPECT_FALSE(*(*s)->has_object(names[0]));
  for (size_t i = 1; i < 4; ++i) EXPECT_TRUE((*s)->get_object(names[i])->present()) << i;
  auto rows = (*s)->list_row_entries("rows");
  ASSERT_TRUE(rows.ok());
}

// ---- Configuration ----

Env env_of(std::initializer_list<std::pair<const char*, const char*>> vars) {
  Env e;
  for (const auto& [k, v] : vars) e.set(k, v);
  return e;
}

TEST(S3Config, FromTheEnvironment) {
  auto c = S3Config::from_env(
      "b", "p", env_of({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}}));
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_EQ(c->credentials.session_token, "");

  c = S3Config::from_env("b", "",
                         env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                 {"AWS_SECRET_ACCESS_KEY", "SK"},
                                 {"AWS_SESSION_TOKEN", "T"},
                                 {"AWS_DEFAULT_REGION", "eu-west-1"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_EQ(c->endpoint, "https://s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(c->credentials.session_token, "T");

  c = S3Config::from_env("b", "",
                         env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                 {"AWS_SECRET_ACCESS_KEY", "SK"},
                                 {"AWS_REGION", "us-west-2"},
                                 {"AWS_DEFAULT_REGION", "eu-west-1"},
                                 {"AWS_ENDPOINT_URL", "http://general:1"},
                                 {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:8080/"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->region, "us-west-2");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:8080");

  c = S3Config::from_env("b", "",
                         env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                 {"AWS_SECRET_ACCESS_KEY", "SK"},
                                 {"AWS_ENDPOINT_URL", "https://minio.example:9000"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->endpoint, "https://minio.example:9000");
}

TEST(S3Config, MissingCredentialsNameTheVariables) {
  auto c = S3Config::from_env("b", "p", Env{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), Errc::kInvalidInput);
  EXPECT_TRUE(contains(c.error().message(), "s3://b/p")) << c.error().message();
  EXPECT_TRUE(
      contains(c.error().message(), "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"))
      << c.error().message();
  c = S3Config::from_env("b", "", env_of({{"AWS_ACCESS_KEY_ID", "AK"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.error().message(), "AWS_SECRET_ACCESS_KEY is not set"))
      << c.error().message();
}

TEST(S3Config, BadEndpointsNameTheVariableAndValue) {
  const char* bad[] = {"ftp://x",    "http://",        "http://host/path", "host:9000",
                       "http://h:0", "http://h:99999", "http://h:x",       "http://u@h",
                       "http://h?q", "http://a b",     "http://::1:80",    "http://[::1"};
  for (const char* e : bad) {
    auto c = S3Config::from_env("b", "",
                                env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                        {"AWS_SECRET_ACCESS_KEY", "SK"},
                                        {"AWS_ENDPOINT_URL_S3", e}}));
    ASSERT_FALSE(c.ok()) << e;
    EXPECT_EQ(c.error().code(), Errc::kInvalidInput);
    EXPECT_TRUE(contains(c.error().message(), "AWS_ENDPOINT_URL_S3=\"" + std::string(e) + "\""))
        << c.error().message();
  }
  EXPECT_TRUE(normalise_endpoint("http://[::1]:8080", "V").ok());
  auto region = S3Config::from_env("b", "",
                                   env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                           {"AWS_SECRET_ACCESS_KEY", "SK"},
                                           {"AWS_REGION", "us/east"}}));
  ASSERT_FALSE(region.ok());
  EXPECT_TRUE(contains(region.error().message(), "AWS_REGION=\"us/east\""));
}

// ---- Live servers (skipped unless scripts/test.sh started them) ----

class S3Live : public ::testing::TestWithParam<testing::LiveServer> {
 protected:
  void SetUp() override {
    if (testing::live_endpoint(GetParam()).empty()) {
      GTEST_SKIP() << GetParam().env_var << " is not set (scripts/test.sh starts the server)";
    }
  }
};

TEST_P(S3Live, ConditionalWriteDetection) {
  auto s = testing::open_live(GetParam(), testing::unique_prefix());
  ASSERT_TRUE(s.ok()) << s.error().message();
  bool swift = std::string(GetParam().env_var) == "BERTH_TEST_S3_SWIFT";
  EXPECT_EQ((*s)->conditional_writes(),
            swift ? ConditionalWrites::kRefused : ConditionalWrites::kIgnored);
  ASSERT_EQ((*s)->notices().size(), 1u);
  EXPECT_TRUE(
      contains((*s)->notices()[0], swift ? "refuses conditional writes" : "ignores If-None-Match"));
}

TEST_P(S3Live, CorruptObjectIsReported) {
  std::string prefix = testing::unique_prefix();
  auto s = testing::open_live(GetParam(), prefix);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto name = (*s)->put_object("the right bytes");
  ASSERT_TRUE(name.ok()) << name.error().message();
  auto raw = testing::raw_request(GetParam(), "PUT", (*s)->object_key(*name), "the wrong bytes");
  ASSERT_TRUE(raw.ok()) << raw.error().message();
  ASSERT_EQ(raw->status, 200);
  auto r = (*s)->get_object(*name);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->found, Found::kCorrupt);
  EXPECT_TRUE(contains(r->problem, "sha256:" + sha256_hex("the wrong bytes"))) << r->problem;
  // Repaired by the next put of the right bytes.
  ASSERT_TRUE((*s)->put_object("the right bytes").ok());
  EXPECT_TRUE((*s)->get_object(*name)->present());
}

TEST_P(S3Live, OpenStoreFromAUrlAndEnvironment) {
  const auto& server = GetParam();
  ASSERT_TRUE(testing::ensure_bucket(server).ok());
  std::string url = "s3://" + std::string(server.bucket) + "/" + testing::unique_prefix();
  Env env = env_of({{"AWS_ACCESS_KEY_ID", server.access_key},
                    {"AWS_SECRET_ACCESS_KEY", server.secret},
                    {"AWS_ENDPOINT_URL_S3", std::getenv(server.env_var)}});
  auto s = open_store(*parse_store_url(url), env);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ((*s)->describe(), url + " (" + std::getenv(server.env_var) + ")");
  EXPECT_TRUE((*s)->put_row(row_address("steps", "k"), "v")->created);
}

TEST_P(S3Live, AUseCopiesAnEntryOntoItselfAndCollectDeletesWhatIsOld) {
  const auto& server = GetParam();
  ASSERT_TRUE(testing::ensure_bucket(server).ok());
  S3Store::Options o;
  o.refresh_after = std::chrono::milliseconds(0);  // every use refreshes
  auto s = S3Store::open(testing::live_config(server, testing::unique_prefix()), o);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto a = (*s)->put_object("collected");
  auto b = (*s)->put_object("spared");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*s)->put_row("rows/v1/steps/k", "row").ok());
  // The copy onto itself is accepted, and keeps the bytes.
  EXPECT_TRUE(*(*s)->has_object(*a));
  EXPECT_TRUE(*(*s)->touch_row("rows/v1/steps/k"));
  EXPECT_TRUE((*s)->get_object(*a)->present());
  EXPECT_EQ(**(*s)->get_row("rows/v1/steps/k"), "row");
  auto listed = (*s)->list_objects();
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  ASSERT_EQ(listed->size(), 2u);
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  for (const auto& e : *listed) {
    EXPECT_GT(e.time_ms, now - 3600'000) << "a listing's LastModified is read";
    EXPECT_GT(e.bytes, 0u);
  }
  // Everything is "old" against a cutoff a minute ahead.
  auto gone = (*s)->collect(EntryKind::kObject, {*a, *b}, now + 60'000,
                            [&]() -> Result<std::set<std::string>> { return std::set{*b}; });
  ASSERT_TRUE(gone.ok()) << gone.error().message();
  EXPECT_EQ(*gone, std::vector<std::string>{*a});
  EXPECT_FALSE(*(*s)->has_object(*a));
  EXPECT_TRUE((*s)->get_object(*b)->present());
}

INSTANTIATE_TEST_SUITE_P(Servers, S3Live, ::testing::Values(testing::kSwift, testing::kS3rver),
                         [](const auto& info) {
                           return std::string(info.param.create_bucket ? "swift" : "s3rver");
                         });

TEST(S3LiveSwift, WrongSecretIsAClearError) {
  if (testing::live_endpoint(testing::kSwift).empty()) {
    GTEST_SKIP() << "BERTH_TEST_S3_SWIFT is not set (scripts/test.sh starts Swift)";
  }
  ASSERT_TRUE(testing::ensure_bucket(testing::kSwift).ok());
  S3Config c = testing::live_config(testing::kSwift, testing::unique_prefix());
  c.credentials.secret_access_key = "not-the-secret";
  auto s = S3Store::open(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kIo);
  const std::string& m = s.error().message();
  EXPECT_TRUE(contains(m, "HTTP 403 SignatureDoesNotMatch")) << m;
  EXPECT_TRUE(contains(m, "check AWS_SECRET_ACCESS_KEY")) << m;
  EXPECT_TRUE(contains(m, c.endpoint + "/berth-test/")) << m;
}

}  // namespace
}  // namespace berth::store
