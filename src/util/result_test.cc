#include "util/result.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

Result<int> half(int x) {
  if (x % 2) return fail(Errc::kInvalidInput, "odd");
  return x / 2;
}

Result<int> quarter(int x) {
  BERTH_TRY(int h, half(x));
  BERTH_TRY(int q, half(h));
  return q;
}

TEST(Result, TryPropagatesTheFirstError) {
  EXPECT_EQ(*quarter(8), 2);
  auto r = quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "odd");
}

TEST(Result, WithContextPrefixesMessageAndKeepsCode) {
  Error e(Errc::kNotFound, "missing");
  Error c = e.with_context("PBS_NODEFILE");
  EXPECT_EQ(c.message(), "PBS_NODEFILE: missing");
  EXPECT_EQ(c.code(), Errc::kNotFound);
  EXPECT_STREQ(errc_name(c.code()), "not-found");
}

TEST(Result, VoidResult) {
  Result<void> ok = Ok{};
  EXPECT_TRUE(ok.ok());
  Result<void> bad = fail(Errc::kIo, "x");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), Errc::kIo);
}

}  // namespace
}  // namespace berth
