#include "store/url.h"

#include <gtest/gtest.h>

#include <string>

#include "store/testing.h"

namespace berth::store {
namespace {

struct UrlCase {
  const char* url;
  const char* base;
  const char* normal;  // to_string() of the result; nullptr when refused
  const char* error;   // a fragment of the message when refused
};

TEST(StoreUrl, ParsesAndRefusesFromATable) {
  const UrlCase cases[] = {
      {"file:///abs/dir", "", "file:///abs/dir", nullptr},
      {"file:///abs//dir/./sub/", "", "file:///abs/dir/sub", nullptr},
      {"file:///a/../b", "", "file:///a/../b", nullptr},  // ".." is the OS's to resolve
      {"file://rel/dir", "/home/u/proj", "file:///home/u/proj/rel/dir", nullptr},
      {"file://./.berth/store", "/p", "file:///p/.berth/store", nullptr},
      {"file://100%/x", "/p", "file:///p/100%/x", nullptr},  // no percent-decoding
      {"file://rel/dir", "", nullptr, "needs a base directory"},
      {"file://rel", "relative/base", nullptr, "base directory is not absolute"},
      {"file://", "", nullptr, "no directory"},
      {"file:///", "", nullptr, "root directory"},
      {"file:///x?mode=ro", "", nullptr, "query"},
      {"file:///x\n", "", nullptr, "control character"},
      {"s3://my-bucket", "", "s3://my-bucket", nullptr},
      {"s3://my.bucket/pre/fix/", "", "s3://my.bucket/pre/fix", nullptr},
      {"s3://ab/x", "", nullptr, "bucket must be"},
      {"s3://My-Bucket/x", "", nullptr, "bucket must be"},
      {"s3://-bucket/x", "", nullptr, "bucket must be"},
      {"s3://bucket/a//b", "", nullptr, "empty, '.' or '..'"},
      {"s3://bucket/../b", "", nullptr, "empty, '.' or '..'"},
      {"http://example.com/x", "", nullptr, "unknown scheme \"http\""},
      {"/abs/dir", "", nullptr, "expected file:///dir"},
      {"", "", nullptr, "expected file:///dir"},
      {"FILE:///x", "", nullptr, "unknown scheme"},
  };
  for (const auto& c : cases) {
    auto r = parse_store_url(c.url, c.base);
    if (c.normal != nullptr) {
      ASSERT_TRUE(r.ok()) << c.url << ": " << r.error().message();
      EXPECT_EQ(r->to_string(), c.normal) << c.url;
    } else {
      ASSERT_FALSE(r.ok()) << c.url << " parsed as " << r->to_string();
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
      EXPECT_NE(r.error().message().find(c.error), std::string::npos)
          << c.url << " -> " << r.error().message();
    }
  }
}

TEST(StoreUrl, ErrorsNameTheUrl) {
  auto r = parse_store_url("gopher://x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("gopher://x"), std::string::npos);
}

TEST(StoreUrl, S3PartsAreSeparated) {
  auto r = parse_store_url("s3://bucket-1/runs/2024");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scheme, StoreUrl::Scheme::kS3);
  EXPECT_EQ(r->bucket, "bucket-1");
  EXPECT_EQ(r->prefix, "runs/2024");
}

TEST(StoreUrl, OpeningS3WithoutCredentialsNamesTheVariables) {
  auto s = open_store(*parse_store_url("s3://bucket/p"), Env{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kInvalidInput);
  EXPECT_NE(s.error().message().find("s3://bucket/p"), std::string::npos);
  EXPECT_NE(s.error().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
}

TEST(StoreUrl, OpeningS3WithABadEndpointNamesItsVariable) {
  Env env;
  env.set("AWS_ACCESS_KEY_ID", "AK");
  env.set("AWS_SECRET_ACCESS_KEY", "SK");
  env.set("AWS_ENDPOINT_URL", "localhost:9000");
  auto s = open_store(*parse_store_url("s3://bucket/p"), env);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kInvalidInput);
  EXPECT_NE(s.error().message().find("AWS_ENDPOINT_URL=\"localhost:9000\""), std::string::npos)
      << s.error().message();
}

TEST(StoreUrl, OpeningFileCreatesTheStore) {
  testing::TempDir d;
  auto s = open_store(*parse_store_url("file://" + d / "new/store"), Env{});
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ((*s)->describe(), "file://" + d / "new/store");
  EXPECT_TRUE((*s)->put_object("x").ok());
}

}  // namespace
}  // namespace berth::store
