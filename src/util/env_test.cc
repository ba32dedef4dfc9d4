#include "util/env.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(Env, ParsesNameValueLinesSkippingCommentsAndBlanks) {
  auto e = Env::parse_env_file("# comment\n\nA=1\r\nB=x=y\nC=\n", "f.env");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->get("A"), "1");
  EXPECT_EQ(e->get("B"), "x=y");
  EXPECT_EQ(e->get("C"), "");
  EXPECT_FALSE(e->get("D").has_value());
}

TEST(Env, RejectsLineWithoutEqualsNamingFileAndLine) {
  auto e = Env::parse_env_file("A=1\nnonsense\n", "f.env");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), Errc::kInvalidInput);
  EXPECT_NE(e.error().message().find("f.env:2:"), std::string::npos) << e.error().message();
}

TEST(Env, RejectsInvalidName) {
  auto e = Env::parse_env_file("1A=1\n", "f.env");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("f.env:1:"), std::string::npos);
}

TEST(Env, GetBoundedRefusesHugeValueNamingVariable) {
  Env env;
  env.set("SLURM_JOB_NODELIST", std::string(64 * 1024, 'a'));
  auto v = env.get_bounded("SLURM_JOB_NODELIST");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message().find("SLURM_JOB_NODELIST"), std::string::npos);
  env.set("X", std::string(Env::kMaxValueBytes, 'a'));
  EXPECT_TRUE(env.get_bounded("X").ok());
}

TEST(Env, MissingFileIsNotFound) {
  auto e = Env::from_file("/nonexistent/berth.env");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), Errc::kNotFound);
  EXPECT_NE(e.error().message().find("/nonexistent/berth.env"), std::string::npos);
}

}  // namespace
}  // namespace berth
