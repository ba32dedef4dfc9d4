// SigV4 against the vectors AWS publishes: the "get-vanilla" cases of the Signature
// Version 4 test suite and the worked S3 examples of "Signature Calculations for the
// Authorization Header" (access key AKIAIOSFODNN7EXAMPLE, 24 May 2013).
#include "store/sigv4.h"

#include <gtest/gtest.h>

#include "util/sha256.h"

namespace berth::store::sigv4 {
namespace {

const std::string kEmptyHash = sha256_hex("");

// The test suite's credentials, scope and time.
const Credentials kSuiteCreds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const Scope kSuiteScope{"us-east-1", "service"};
constexpr const char* kSuiteDate = "20150830T123600Z";

// The S3 documentation's.
const Credentials kS3Creds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const Scope kS3Scope{"us-east-1", "s3"};
constexpr const char* kS3Date = "20130524T000000Z";
constexpr const char* kS3Host = "examplebucket.s3.amazonaws.com";

std::string header(const Signed& s, const std::string& name) {
  for (const auto& [k, v] : s.headers_to_add) {
    if (k == name) return v;
  }
  return "";
}

TEST(SigV4, GetVanillaMatchesTheTestSuite) {
  Request r{"GET", "example.amazonaws.com", "/", {}, {}, kEmptyHash};
  Signed s = sign(r, kSuiteCreds, kSuiteScope, kSuiteDate);
  EXPECT_EQ(s.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "host;x-amz-date\n" +
                kEmptyHash);
  EXPECT_EQ(header(s, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(header(s, "x-amz-date"), kSuiteDate);
}

TEST(SigV4, GetVanillaQueryOrderKeyCaseSortsTheQuery) {
  Request r{"GET", "example.amazonaws.com",
            "/",   {{"Param2", "value2"}, {"Param1", "value1"}},
            {},    kEmptyHash};
  Signed s = sign(r, kSuiteCreds, kSuiteScope, kSuiteDate);
  EXPECT_EQ(s.signature, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4, S3GetObjectExample) {
  Request r{"GET",
            kS3Host,
            "/test.txt",
            {},
            {{"Range", "bytes=0-9"}, {"x-amz-content-sha256", kEmptyHash}},
            kEmptyHash};
  Signed s = sign(r, kS3Creds, kS3Scope, kS3Date);
  EXPECT_EQ(header(s, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, S3PutObjectExampleEncodesTheKeyAndSignsThePayload) {
  std::string body_hash = sha256_hex("Welcome to Amazon S3.");
  ASSERT_EQ(body_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  Request r{"PUT",
            kS3Host,
            "/test$file.text",
            {},
            {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
             {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
             {"x-amz-content-sha256", body_hash}},
            body_hash};
  Signed s = sign(r, kS3Creds, kS3Scope, kS3Date);
  EXPECT_EQ(s.canonical_request.substr(0, 22), "PUT\n/test%24file.text\n");
  // The documented hash of the canonical request, then the signature.
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d");
  EXPECT_EQ(s.signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4, S3GetBucketLifecycleExampleSignsAValuelessParameter) {
  Request r{"GET",     kS3Host, "/", {{"lifecycle", ""}}, {{"x-amz-content-sha256", kEmptyHash}},
            kEmptyHash};
  EXPECT_EQ(sign(r, kS3Creds, kS3Scope, kS3Date).signature,
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, S3ListObjectsExampleSortsTheQuery) {
  Request r{"GET",
            kS3Host,
            "/",
            {{"prefix", "J"}, {"max-keys", "2"}},
            {{"x-amz-content-sha256", kEmptyHash}},
            kEmptyHash};
  EXPECT_EQ(sign(r, kS3Creds, kS3Scope, kS3Date).signature,
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, SessionTokenIsSentAndSigned) {
  Credentials c = kS3Creds;
  c.session_token = "token/with+chars";
  Request r{"GET", kS3Host, "/k", {}, {}, kEmptyHash};
  Signed with = sign(r, c, kS3Scope, kS3Date);
  EXPECT_EQ(header(with, "x-amz-security-token"), "token/with+chars");
  EXPECT_NE(
      header(with, "authorization").find("SignedHeaders=host;x-amz-date;x-amz-security-token"),
      std::string::npos);
  EXPECT_NE(with.signature, sign(r, kS3Creds, kS3Scope, kS3Date).signature);
}

TEST(SigV4, HeaderValuesAreTrimmedAndFolded) {
  Request a{"PUT", kS3Host, "/k", {}, {{"If-None-Match", "  *  "}, {"X-A", "a   b"}}, kEmptyHash};
  Request b{"PUT", kS3Host, "/k", {}, {{"if-none-match", "*"}, {"x-a", "a b"}}, kEmptyHash};
  Signed sa = sign(a, kS3Creds, kS3Scope, kS3Date);
  EXPECT_EQ(sa.signature, sign(b, kS3Creds, kS3Scope, kS3Date).signature);
  EXPECT_NE(sa.canonical_request.find("if-none-match:*\n"), std::string::npos);
}

TEST(SigV4, UriEncodingFollowsTheRulesFromATable) {
  struct Case {
    const char* in;
    bool keep_slash;
    const char* out;
  };
  const Case cases[] = {
      {"AZaz09-._~", false, "AZaz09-._~"},
      {"a b", false, "a%20b"},
      {"a+b", false, "a%2Bb"},
      {"100%", false, "100%25"},
      {"a/b", true, "a/b"},
      {"a/b", false, "a%2Fb"},
      {"=&?#:", false, "%3D%26%3F%23%3A"},
      {"sha256:ab", true, "sha256%3Aab"},
      {"\xc3\xa9", false, "%C3%A9"},
      {"", false, ""},
  };
  for (const auto& c : cases) EXPECT_EQ(uri_encode(c.in, c.keep_slash), c.out) << c.in;
  EXPECT_EQ(canonical_uri(""), "/");
  EXPECT_EQ(canonical_uri("/bucket/rows/v1/a b"), "/bucket/rows/v1/a%20b");
}

TEST(SigV4, CanonicalQueryEncodesThenSorts) {
  EXPECT_EQ(
      canonical_query({{"prefix", "p/rows/"}, {"list-type", "2"}, {"continuation-token", "a+b="}}),
      "continuation-token=a%2Bb%3D&list-type=2&prefix=p%2Frows%2F");
  EXPECT_EQ(canonical_query({}), "");
}

TEST(SigV4, AmzDateIsUtcCompact) {
  auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));
  EXPECT_EQ(amz_date(t), "20150830T123600Z");
}

}  // namespace
}  // namespace berth::store::sigv4
